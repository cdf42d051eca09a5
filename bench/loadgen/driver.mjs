// Flow driver for bench/run.py: drives OpenID Connect flows over keep-alive HTTP/1.1 (undici Pool,
// no pipelining) and checks every response. Runs pinned to its own core by the caller.
//
//   node driver.mjs '<json config>'      -> one JSON object on stdout
//
// config: {
//   mode: "check" | "sso" | "token" | "full" | "get" | "mint-access-token",
//   issuer, clients: [{client_id, client_secret?, type, redirect_uris}], user: {username, password},
//   concurrency, duration, warmup (seconds), latencies (true: every recorded latency in the result),
//   warmup_ops (the warm-up also lasts until this many operations completed),
//   min_ops, max_duration (the recorded window also lasts until min_ops operations, at most max_duration s),
//   client: "pool" (default: an undici Pool shared by the virtual users) | "oneby1" (each virtual user
//           its own connection, and one request written per event-loop turn across all of them),
//   cpu_pids, clk_tck                (the server's processes: their CPU time over the recorded window is
//                                     reported as server_cpu_s and server_cpu_us_per_op; Linux /proc)
//   mint_seconds, max_codes          (mode token)
//   origin, path, expect, auth       (mode get: a GET row, or the generator's own ceiling; expect is a
//                                     string or a list of strings the body must contain)
// }
// result: { ok, mode, concurrency, count, elapsed, rate, p50_ms, p99_ms, errors, error_samples, ... }
import { AsyncLocalStorage } from 'node:async_hooks';
import * as crypto from 'node:crypto';
import { readFileSync } from 'node:fs';

import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { Client, Pool } from 'undici';

const cfg = JSON.parse(process.argv[2]);

// ---------------------------------------------------------------------------- errors
const errorSamples = [];
let errorCount = 0;
class CheckError extends Error {}
function fail(msg) {
  throw new CheckError(msg);
}
function noteError(err) {
  errorCount += 1;
  if (errorSamples.length < 8) errorSamples.push(String(err?.message || err).slice(0, 400));
}

// ---------------------------------------------------------------------------- HTTP
const pools = new Map();
function poolFor(origin) {
  let pool = pools.get(origin);
  if (!pool) {
    pool = new Pool(origin, {
      connections: Math.max(1, cfg.concurrency || 1),
      pipelining: 1,
      keepAliveTimeout: 60_000,
      keepAliveMaxTimeout: 600_000,
    });
    pools.set(origin, pool);
  }
  return pool;
}

// --client oneby1: a virtual user's requests go one by one over its own connection (closed loop, no
// pipelining, no sharing), and the requests of all virtual users are written one per event-loop turn,
// so responses that arrive together do not go back out as one burst of requests.
const ONE_BY_ONE = cfg.client === 'oneby1';
const virtualUser = new AsyncLocalStorage();
const connections = new Map();
function connectionFor(origin, w) {
  const key = `${origin} ${w}`;
  let conn = connections.get(key);
  if (!conn) {
    conn = new Client(origin, { pipelining: 1, keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000 });
    connections.set(key, conn);
  }
  return conn;
}
let lastTurn = Promise.resolve();
function ownTurn() {
  const turn = lastTurn.then(() => new Promise((resolve) => { setImmediate(resolve); }));
  lastTurn = turn;
  return turn;
}
function dispatcherFor(origin) {
  const w = virtualUser.getStore();
  return ONE_BY_ONE && w !== undefined ? connectionFor(origin, w) : poolFor(origin);
}

async function http(method, url, { headers = {}, body, jar } = {}) {
  const u = new URL(url);
  if (ONE_BY_ONE && virtualUser.getStore() !== undefined) await ownTurn();
  const h = { ...headers };
  if (jar) {
    const cookie = jar.header(u.pathname);
    if (cookie) h.cookie = cookie;
  }
  if (body !== undefined) h['content-type'] ??= 'application/x-www-form-urlencoded';
  const res = await dispatcherFor(u.origin).request({ method, path: u.pathname + u.search, headers: h, body });
  const text = await res.body.text();
  if (jar) jar.store(res.headers['set-cookie'], u.pathname);
  return { status: res.statusCode, headers: res.headers, text, url: u };
}

// ---------------------------------------------------------------------------- cookies
class Jar {
  constructor() {
    this.cookies = new Map(); // name\0path -> {name, value, path}
  }

  store(setCookie, reqPath) {
    if (!setCookie) return;
    for (const line of Array.isArray(setCookie) ? setCookie : [setCookie]) {
      const parts = line.split(';');
      const eq = parts[0].indexOf('=');
      if (eq < 1) continue;
      const name = parts[0].slice(0, eq).trim();
      const value = parts[0].slice(eq + 1).trim();
      let path = '/';
      let expired = false;
      for (const attr of parts.slice(1)) {
        const [k, ...rest] = attr.split('=');
        const key = k.trim().toLowerCase();
        const v = rest.join('=').trim();
        if (key === 'path' && v.startsWith('/')) path = v;
        else if (key === 'max-age' && Number(v) <= 0) expired = true;
        else if (key === 'expires' && Date.parse(v) < Date.now()) expired = true;
      }
      const id = `${name}\0${path}`;
      if (expired || value === '') this.cookies.delete(id);
      else this.cookies.set(id, { name, value, path });
    }
    void reqPath;
  }

  header(reqPath) {
    const out = [];
    for (const c of this.cookies.values()) {
      if (c.path === '/' || reqPath === c.path || reqPath.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`)) {
        out.push(`${c.name}=${c.value}`);
      }
    }
    return out.join('; ');
  }
}

// ---------------------------------------------------------------------------- HTML forms
const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'", '#x27': "'", '#x2F': '/', '#47': '/' };
function unescapeHtml(s) {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g, (m, e) => {
    if (e in ENTITIES) return ENTITIES[e];
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return m;
  });
}
function attrs(tag) {
  const out = {};
  for (const m of tag.matchAll(/([^\s=<>"'/]+)\s*(?:=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?/g)) {
    out[m[1].toLowerCase()] = unescapeHtml(m[2] ?? m[3] ?? m[4] ?? '');
  }
  return out;
}
function findForm(html, id) {
  const re = new RegExp(`<form\\b[^>]*\\bid\\s*=\\s*["']?${id}["']?[^>]*>([\\s\\S]*?)</form>`, 'i');
  const m = html.match(re);
  if (!m) return null;
  const openTag = m[0].slice(0, m[0].indexOf('>') + 1);
  const form = attrs(openTag.slice(5, -1));
  const fields = [];
  for (const im of m[1].matchAll(/<input\b([^>]*)>/gi)) {
    const a = attrs(im[1]);
    if ((a.type || '').toLowerCase() === 'hidden' && a.name) fields.push([a.name, a.value ?? '']);
  }
  const buttons = [];
  for (const bm of m[1].matchAll(/<button\b([^>]*)>/gi)) {
    const a = attrs(bm[1]);
    if (a.name) buttons.push([a.name, a.value ?? '']);
  }
  return { action: form.action ?? '', method: (form.method || 'get').toLowerCase(), fields, buttons };
}

// ---------------------------------------------------------------------------- OIDC helpers
let discovery;
let JWKS;
const expectedSub = new Map(); // client_id -> sub (pairwise, stable per client)
const b64url = (buf) => Buffer.from(buf).toString('base64url');
const rnd = () => b64url(crypto.randomBytes(32));

function redirectUriFor(client) {
  const uri = client.redirect_uris[0];
  if (client.type === 'native') {
    // RFC 8252 7.3: the port of a loopback redirect is ignored; use a random one like a real app
    const u = new URL(uri);
    u.port = String(49152 + crypto.randomInt(16000));
    return u.toString();
  }
  return uri;
}

function basicAuth(client) {
  const enc = (s) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${enc(client.client_id)}:${enc(client.client_secret)}`).toString('base64')}`;
}

// Follows an authorization request to the client's redirect_uri and returns the code.
// mode "sso": the session must be honoured (no HTML page allowed on the way).
// mode "login": the login form (campusid) and the consent form are filled in when they show up.
async function authorize(jar, client, loginMode) {
  const redirectUri = redirectUriFor(client);
  const state = rnd();
  const nonce = rnd();
  const verifier = rnd();
  const challenge = crypto.createHash('sha256').update(verifier).digest('base64url');
  const q = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid',
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  let res = await http('GET', `${discovery.authorization_endpoint}?${q}`, { jar });
  let lastWasPost = false;
  for (let hop = 0; hop < 12; hop += 1) {
    if (res.status === 302 || res.status === 303 || res.status === 307) {
      if (lastWasPost && res.status !== 303) fail(`POST answered ${res.status}, expected 303`);
      const loc = res.headers.location;
      if (!loc) fail(`${res.status} without Location at ${res.url.pathname}`);
      const next = new URL(loc, res.url);
      if (next.href.startsWith(redirectUri.split('?')[0]) && next.pathname === new URL(redirectUri).pathname
          && next.host === new URL(redirectUri).host) {
        const p = next.searchParams;
        if (p.get('error')) fail(`authorization error: ${p.get('error')} ${p.get('error_description') || ''}`);
        const code = p.get('code');
        if (!code) fail('redirect without code');
        if (p.get('state') !== state) fail('state mismatch');
        if (p.get('iss') !== discovery.issuer) fail(`iss mismatch: ${p.get('iss')}`);
        return { code, verifier, nonce, redirectUri };
      }
      if (next.origin !== res.url.origin) fail(`redirect to foreign origin ${next.origin}`);
      res = await http('GET', next.href, { jar });
      lastWasPost = false;
      continue;
    }
    if (res.status === 200 && /<form/i.test(res.text)) {
      if (!loginMode) fail(`session not honoured: HTML page at ${res.url.pathname}`);
      const login = findForm(res.text, 'login-form');
      const consent = login ? null : findForm(res.text, 'consent-form');
      const form = login || consent;
      if (!form) fail(`unexpected form at ${res.url.pathname}`);
      if (form.method !== 'post') fail('form method is not post');
      const body = new URLSearchParams(form.fields);
      if (login) {
        body.set('username', cfg.user.username);
        body.set('password', cfg.user.password);
      } else {
        if (!form.buttons.some(([n, v]) => n === 'decision' && v === 'allow')) fail('no allow button');
        body.set('decision', 'allow');
      }
      const action = new URL(form.action || res.url.href, res.url);
      res = await http('POST', action.href, { jar, body: body.toString() });
      lastWasPost = true;
      continue;
    }
    fail(`unexpected ${res.status} at ${res.url.pathname}: ${res.text.slice(0, 200)}`);
  }
  return fail('too many redirects');
}

async function exchange(client, { code, verifier, nonce, redirectUri }) {
  const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier });
  const headers = {};
  if (client.client_secret) headers.authorization = basicAuth(client);
  else body.set('client_id', client.client_id);
  const res = await http('POST', discovery.token_endpoint, { headers, body: body.toString() });
  if (res.status !== 200) fail(`token: ${res.status} ${res.text.slice(0, 200)}`);
  if (!/no-store/i.test(res.headers['cache-control'] || '')) fail('token: no Cache-Control: no-store');
  let tok;
  try {
    tok = JSON.parse(res.text);
  } catch {
    fail('token: body is not JSON');
  }
  if (String(tok.token_type).toLowerCase() !== 'bearer') fail(`token_type ${tok.token_type}`);
  if (!tok.access_token) fail('no access_token');
  if (!tok.id_token) fail('no id_token');
  if (!decodeProtectedHeader(tok.id_token).kid) fail('id_token without kid');
  let payload;
  try {
    ({ payload } = await jwtVerify(tok.id_token, JWKS, {
      issuer: discovery.issuer,
      audience: client.client_id,
      algorithms: ['RS256'],
    }));
  } catch (err) {
    fail(`id_token: ${err.code || ''} ${err.message}`);
  }
  if (payload.nonce !== nonce) fail('id_token nonce mismatch');
  if (!payload.sub) fail('id_token without sub');
  const seen = expectedSub.get(client.client_id);
  if (seen === undefined) expectedSub.set(client.client_id, payload.sub);
  else if (seen !== payload.sub) fail('sub changed between flows (not a stable pairwise sub)');
  if (client.type === 'native' && !tok.refresh_token) fail('native client got no refresh_token');
  return { tok, payload };
}

async function userinfo(accessToken, sub) {
  const res = await http('GET', discovery.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}` } });
  if (res.status !== 200) fail(`userinfo: ${res.status} ${res.text.slice(0, 200)}`);
  const body = JSON.parse(res.text);
  if (body.sub !== sub) fail('userinfo sub differs from the id_token sub');
  return body;
}

async function newSession(client) {
  const jar = new Jar();
  const grant = await authorize(jar, client, true);
  await exchange(client, grant); // the code must not be left unused
  return jar;
}

// ---------------------------------------------------------------------------- CAS helpers
// cfg.cas: { login, validate, service } (campusid's /cas/login and /cas/p3/serviceValidate, or a peer's)
function casLoginForm(html) {
  const byId = findForm(html, 'login-form');
  if (byId) return byId;
  // a peer's form without our id (django-mama-cas): the form that asks for a password
  for (const m of html.matchAll(/<form\b[\s\S]*?<\/form>/gi)) {
    if (/name\s*=\s*["']?password/i.test(m[0])) return findForm(m[0].replace(/<form\b/i, '<form id="found"'), 'found');
  }
  return null;
}

// /cas/login?service=… with the jar's session: a 302 to the service with a ticket. loginMode: the
// login form is answered when it shows up (the first sign-in of a virtual user).
async function casTicket(jar, loginMode) {
  const { login, service } = cfg.cas;
  let res = await http('GET', `${login}?${new URLSearchParams({ service })}`, { jar });
  let lastWasPost = false;
  for (let hop = 0; hop < 8; hop += 1) {
    if (res.status === 302 || res.status === 303) {
      if (lastWasPost && res.status !== 303 && res.status !== 302) fail(`POST answered ${res.status}`);
      const next = new URL(res.headers.location, res.url);
      if (next.href.startsWith(service)) {
        const ticket = next.searchParams.get('ticket');
        if (!ticket || !/^ST-[A-Za-z0-9-]+$/.test(ticket)) fail(`redirect to the service without a ticket: ${next.search}`);
        return ticket;
      }
      if (next.origin !== res.url.origin) fail(`redirect to foreign origin ${next.origin}`);
      res = await http('GET', next.href, { jar });
      lastWasPost = false;
      continue;
    }
    if (res.status === 200 && /<form/i.test(res.text)) {
      if (!loginMode) fail(`session not honoured: a page at ${res.url.pathname}`);
      const form = casLoginForm(res.text);
      if (!form) fail(`no login form at ${res.url.pathname}`);
      const body = new URLSearchParams(form.fields);
      body.set('username', cfg.user.username);
      body.set('password', cfg.user.password);
      const action = new URL(form.action || res.url.href, res.url);
      res = await http('POST', action.href, { jar, body: body.toString() });
      lastWasPost = true;
      continue;
    }
    fail(`unexpected ${res.status} at ${res.url.pathname}: ${res.text.slice(0, 200)}`);
  }
  return fail('too many redirects');
}

// /cas/p3/serviceValidate: a 200 whose cas:user is the bench user (or, `expectFailure`, a failure).
async function casValidate(ticket, expectFailure = false) {
  const q = new URLSearchParams({ service: cfg.cas.service, ticket });
  const res = await http('GET', `${cfg.cas.validate}?${q}`);
  if (res.status !== 200) fail(`validate: ${res.status}`);
  const ok = res.text.includes(`<cas:user>${cfg.user.username}</cas:user>`);
  if (expectFailure ? ok || !res.text.includes('authenticationFailure') : !ok) fail(`validate: ${res.text.slice(0, 300)}`);
}

// ---------------------------------------------------------------------------- load loop
const now = () => performance.now();

// CPU seconds (user + system) the server's processes have used so far: fields 14 and 15 of
// /proc/<pid>/stat, in clock ticks. A process that has exited counts as 0 (it cannot be read).
function serverCpuSeconds() {
  let ticks = 0;
  for (const pid of cfg.cpu_pids || []) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone
    }
  }
  return ticks / (cfg.clk_tck || 100);
}

function percentile(sorted, p) {
  if (!sorted.length) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

// Runs op(worker) on `concurrency` workers: `warmup` seconds unrecorded, then `duration` seconds
// recorded. Throughput counts the ops that complete inside the recorded window (steady state after
// the warm-up), latency is measured on those same ops. `more()` may end the run early (no more
// pre-minted codes).
async function load(
  concurrency,
  op,
  { warmup = 0, duration, more = () => true, warmup_ops: warmupOps = 0, min_ops: minOps = 0, max_duration: maxDuration = 0 },
) {
  const lat = [];
  let count = 0;
  let t0 = 0;
  let tEnd = 0;
  let recording = false;
  let stop = false;
  let endedEarly = false;
  let completed = 0;
  let exited = 0;
  const workers = [];
  for (let w = 0; w < concurrency; w += 1) {
    workers.push(virtualUser.run(w, async () => {
      while (!stop) {
        if (!more()) {
          endedEarly = true;
          break;
        }
        const started = now();
        try {
          await op(w);
          completed += 1;
          if (recording) {
            count += 1;
            lat.push(now() - started);
          }
        } catch (err) {
          noteError(err);
          if (!(err instanceof CheckError) && errorCount > 50) break;
        }
      }
      exited += 1;
    }));
  }
  const warmStart = now();
  await new Promise((r) => { setTimeout(r, warmup * 1000); });
  // steady state: every worker has completed about one op (slow ops at high concurrency, e.g. 32
  // password hashes sharing one core, otherwise all land after a short warm-up; at most 15 s more),
  // and `warmup_ops` ops have completed, the same number for every server (at most 5 s more: a row
  // of password logins at c=1 does not wait for hundreds)
  const steadyBy = now() + 15_000;
  const opsBy = now() + 5_000;
  const cold = () => (warmup > 0 && completed < concurrency) || (completed < warmupOps && now() < opsBy);
  while (cold() && exited < concurrency && now() < steadyBy) {
    await new Promise((r) => { setTimeout(r, 20); });
  }
  const warmupDone = { warmup_s: (now() - warmStart) / 1000, warmup_ops_done: completed };
  recording = true;
  process.stderr.write('phase: recording\n'); // bench/profile.py starts sampling here
  t0 = now();
  const cpu0 = serverCpuSeconds();
  // the recorded window: `duration` seconds, longer until `min_ops` ops were recorded, at most
  // `max_duration` seconds
  const longest = Math.max(duration, maxDuration || duration) * 1000;
  await new Promise((resolve) => {
    let finished = false;
    const done = () => { if (!finished) { finished = true; clearInterval(poll); clearTimeout(cap); resolve(); } };
    const poll = setInterval(() => { if (now() - t0 >= duration * 1000 && count >= minOps) done(); }, 10);
    const cap = setTimeout(done, longest);
    Promise.all(workers).then(done);
  });
  tEnd = now();
  const serverCpu = serverCpuSeconds() - cpu0;
  recording = false;
  stop = true;
  await Promise.all(workers);
  lat.sort((a, b) => a - b);
  const elapsed = (tEnd - t0) / 1000;
  if (count === 0) noteError(new Error(`no operation completed in the ${elapsed.toFixed(1)} s window`));
  return {
    count,
    elapsed,
    rate: count / elapsed,
    p50_ms: percentile(lat, 50),
    p99_ms: percentile(lat, 99),
    ended_early: endedEarly,
    short_of_min_ops: count < minOps,
    client: ONE_BY_ONE ? 'oneby1' : 'pool',
    ...(cfg.cpu_pids ? { server_cpu_s: serverCpu, server_cpu_us_per_op: count ? (serverCpu / count) * 1e6 : null } : {}),
    ...warmupDone,
    // every recorded latency, when asked for: windows of one row are pooled by the caller
    ...(cfg.latencies ? { latencies_ms: lat } : {}),
  };
}

// ---------------------------------------------------------------------------- modes
async function setup() {
  const res = await http('GET', `${cfg.issuer}/.well-known/openid-configuration`);
  if (res.status !== 200) fail(`discovery: ${res.status}`);
  discovery = JSON.parse(res.text);
  if (discovery.issuer !== cfg.issuer) fail(`discovery issuer ${discovery.issuer} != ${cfg.issuer}`);
  const jwks = await http('GET', discovery.jwks_uri);
  if (jwks.status !== 200) fail(`jwks: ${jwks.status}`);
  JWKS = createLocalJWKSet(JSON.parse(jwks.text));
}

const webClient = () => cfg.clients.find((c) => c.type === 'web');

const modes = {
  // one of each flow for each client, before anything is timed
  async check() {
    const out = {};
    for (const client of cfg.clients) {
      const jar = new Jar();
      const g1 = await authorize(jar, client, true);
      const r1 = await exchange(client, g1);
      await userinfo(r1.tok.access_token, r1.payload.sub);
      const g2 = await authorize(jar, client, false);
      const r2 = await exchange(client, g2);
      await userinfo(r2.tok.access_token, r2.payload.sub);
      // a redeemed code is single use
      const again = await http('POST', discovery.token_endpoint, {
        headers: client.client_secret ? { authorization: basicAuth(client) } : {},
        body: new URLSearchParams({ grant_type: 'authorization_code', code: g2.code, redirect_uri: g2.redirectUri,
          code_verifier: g2.verifier, ...(client.client_secret ? {} : { client_id: client.client_id }) }).toString(),
      });
      if (again.status !== 400 || !again.text.includes('invalid_grant')) fail(`code reuse: ${again.status} ${again.text.slice(0, 100)}`);
      out[client.type] = { sub: r1.payload.sub, id_token_kid: decodeProtectedHeader(r1.tok.id_token).kid };
    }
    return out;
  },

  async 'mint-access-token'() {
    const client = webClient();
    const jar = await newSession(client);
    const g = await authorize(jar, client, false);
    const { tok, payload } = await exchange(client, g);
    await userinfo(tok.access_token, payload.sub);
    return { access_token: tok.access_token, sub: payload.sub, userinfo_endpoint: discovery.userinfo_endpoint };
  },

  // authorize GET with a session cookie -> code -> token exchange
  async sso() {
    const client = webClient();
    const jars = [];
    for (let w = 0; w < cfg.concurrency; w += 1) jars.push(await newSession(client));
    return load(cfg.concurrency, async (w) => {
      const g = await authorize(jars[w], client, false);
      await exchange(client, g);
    }, cfg);
  },

  // no session: login (campusid's form, or node's interaction) -> consent if asked -> code -> token
  async full() {
    const client = webClient();
    return load(cfg.concurrency, async () => {
      const g = await authorize(new Jar(), client, true);
      await exchange(client, g);
    }, cfg);
  },

  // token exchanges only: codes are minted first (untimed) through sessions at concurrency 32
  async token() {
    const client = webClient();
    const minters = 32;
    const jars = [];
    for (let w = 0; w < minters; w += 1) jars.push(await newSession(client));
    const codes = [];
    const maxCodes = cfg.max_codes || 40000;
    const minCodes = Math.min(maxCodes, cfg.min_codes || 0);
    const mintStart = now();
    const deadline = mintStart + (cfg.mint_seconds || 10) * 1000;
    const hardDeadline = mintStart + 120_000;
    const minting = () => codes.length < maxCodes && (now() < deadline || (codes.length < minCodes && now() < hardDeadline));
    await Promise.all(jars.map(async (jar) => {
      while (minting()) {
        try {
          codes.push(await authorize(jar, client, false));
        } catch (err) {
          noteError(err);
          if (errorCount > 50) return;
        }
      }
    }));
    const minted = codes.length;
    const mintRate = minted / ((now() - mintStart) / 1000);
    let next = 0;
    const res = await load(cfg.concurrency, async () => {
      const g = codes[next];
      next += 1;
      await exchange(client, g);
    }, { ...cfg, more: () => next < codes.length });
    return { ...res, codes_minted: minted, mint_rate: mintRate, codes_left: codes.length - next };
  },

  // CAS: one sign-in through the login form, its ticket validated once and refused the second time
  async 'cas-check'() {
    const ticket = await casTicket(new Jar(), true);
    await casValidate(ticket);
    await casValidate(ticket, true);
    return {};
  },

  // CAS SSO: /cas/login with a session cookie -> 302 with a service ticket -> /cas/p3/serviceValidate
  async 'cas-sso'() {
    const jars = [];
    for (let w = 0; w < cfg.concurrency; w += 1) {
      const jar = new Jar();
      await casValidate(await casTicket(jar, true)); // the virtual user's session
      jars.push(jar);
    }
    return load(cfg.concurrency, async (w) => {
      await casValidate(await casTicket(jars[w], false));
    }, cfg);
  },

  // trivial GET (the generator's own ceiling)
  async get() {
    const url = `${cfg.origin}${cfg.path || '/'}`;
    return load(cfg.concurrency, async () => {
      const res = await http('GET', url, { headers: cfg.auth ? { authorization: cfg.auth } : {} });
      if (res.status !== 200) fail(`GET ${res.status}`);
      const expect = Array.isArray(cfg.expect) ? cfg.expect : cfg.expect ? [cfg.expect] : [];
      if (!expect.every((e) => res.text.includes(e))) fail('unexpected body');
    }, cfg);
  },
};

async function main() {
  let result;
  try {
    if (cfg.mode !== 'get' && !cfg.mode.startsWith('cas-')) await setup();
    result = await modes[cfg.mode]();
  } catch (err) {
    noteError(err);
    result = {};
  }
  const out = {
    ...result,
    mode: cfg.mode,
    concurrency: cfg.concurrency,
    errors: errorCount,
    error_samples: errorSamples,
    ok: errorCount === 0,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
  await Promise.all([...pools.values(), ...connections.values()].map((p) => p.destroy()));
  process.exit(0);
}

main();
