// node-oidc-provider 9.13.3 configured like campusid, for the side-by-side benchmark.
//
// Usage: NODE_ENV=production node server.mjs --port P [--host 127.0.0.1]
// Prints one JSON line on stdout when it listens:
//   {"issuer", "clients": [{"client_id", "client_secret"?, "type", "redirect_uris"}], "user": {...}}
//
// What is configured like campusid (see docs/architecture.md):
//   - response_type=code only, PKCE required for every client, S256 only (9.x knows no other method);
//   - pairwise subjects: base64url(HMAC-SHA256(secret, sector "|" accountId));
//   - ID tokens signed RS256 (a fresh 2048-bit RSA key per start, like campusid's own key);
//   - one confidential web client (client_secret_basic) and one public native client (loopback
//     redirect, port ignored per RFC 8252), refresh tokens for the native client;
//   - consent remembered once given (the native_client_prompt check is removed, as campusid does not
//     force a prompt on every native authorization);
//   - a fixed user, logged in by a custom interaction route that finishes login + consent in one step,
//     without a password (the password cost of campusid is shown separately in the table);
//   - in-memory adapter: a plain Map with expiry and a grant index (the built-in dev adapter is an LRU
//     of 1,000 entries, which would evict the codes minted before the token row);
//   - production-like: NODE_ENV=production, no dev interactions, every "you SHOULD change" default
//     replaced so nothing is logged per request.
import * as crypto from 'node:crypto';
import * as http from 'node:http';

import Provider, { interactionPolicy } from 'oidc-provider';

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i !== -1 ? process.argv[i + 1] : dflt;
}

const host = arg('host', '127.0.0.1');
const port = Number(arg('port', '3000'));
const issuer = process.env.NODE_OP_ISSUER || `http://${host}:${port}`;

const ACCOUNT_ID = 'u-bench-0001';
const PAIRWISE_SECRET = crypto.randomBytes(32);

// ---------------------------------------------------------------------------- in-memory adapter
const GRANTABLE = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode',
  'BackchannelAuthenticationRequest']);
const store = new Map(); // key -> { payload, exp (ms, Infinity when none) }
const grantIndex = new Map(); // grantId -> Set(key)
const uidIndex = new Map(); // session uid -> session id
const userCodeIndex = new Map();

function live(key) {
  const entry = store.get(key);
  if (!entry) return undefined;
  if (entry.exp <= Date.now()) {
    store.delete(key);
    return undefined;
  }
  return entry.payload;
}

class MapAdapter {
  constructor(name) {
    this.name = name;
  }

  key(id) {
    return `${this.name}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    const exp = typeof expiresIn === 'number' ? Date.now() + expiresIn * 1000 : Infinity;
    store.set(key, { payload, exp });
    if (this.name === 'Session' && payload.uid) uidIndex.set(payload.uid, id);
    if (payload.userCode) userCodeIndex.set(payload.userCode, id);
    if (GRANTABLE.has(this.name) && payload.grantId) {
      let keys = grantIndex.get(payload.grantId);
      if (!keys) grantIndex.set(payload.grantId, (keys = new Set()));
      keys.add(key);
    }
  }

  async find(id) {
    return live(this.key(id));
  }

  async findByUid(uid) {
    const id = uidIndex.get(uid);
    return id === undefined ? undefined : this.find(id);
  }

  async findByUserCode(userCode) {
    const id = userCodeIndex.get(userCode);
    return id === undefined ? undefined : this.find(id);
  }

  async consume(id) {
    const payload = live(this.key(id));
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    const key = this.key(id);
    const payload = live(key);
    store.delete(key);
    if (payload?.uid && uidIndex.get(payload.uid) === id) uidIndex.delete(payload.uid);
  }

  async revokeByGrantId(grantId) {
    const keys = grantIndex.get(grantId);
    if (!keys) return;
    for (const key of keys) store.delete(key);
    grantIndex.delete(grantId);
  }
}

// expired entries are dropped lazily on read and by this sweep
setInterval(() => {
  const now = Date.now();
  for (const [key, entry] of store) if (entry.exp <= now) store.delete(key);
  for (const [grantId, keys] of grantIndex) {
    for (const key of keys) if (!store.has(key)) keys.delete(key);
    if (keys.size === 0) grantIndex.delete(grantId);
  }
}, 5000).unref();

// ---------------------------------------------------------------------------- configuration
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const rsaJwk = { ...privateKey.export({ format: 'jwk' }), kid: 'rs256-1', alg: 'RS256', use: 'sig' };

const webClient = {
  client_id: 'bench-web',
  client_secret: crypto.randomBytes(32).toString('base64url'),
  application_type: 'web',
  redirect_uris: ['https://rp.example/callback'],
  response_types: ['code'],
  grant_types: ['authorization_code'],
  token_endpoint_auth_method: 'client_secret_basic',
  subject_type: 'pairwise',
  id_token_signed_response_alg: 'RS256',
  scope: 'openid profile email offline_access',
};
const nativeClient = {
  client_id: 'bench-native',
  application_type: 'native',
  redirect_uris: ['http://127.0.0.1/callback'],
  response_types: ['code'],
  grant_types: ['authorization_code', 'refresh_token'],
  token_endpoint_auth_method: 'none',
  subject_type: 'pairwise',
  id_token_signed_response_alg: 'RS256',
  scope: 'openid profile email offline_access',
};

const policy = interactionPolicy.base();
policy.get('consent').checks.remove('native_client_prompt');

const HOUR = 3600;
const DAY = 24 * HOUR;

const configuration = {
  adapter: MapAdapter,
  clients: [webClient, nativeClient],
  jwks: { keys: [rsaJwk] },
  cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  responseTypes: ['code'],
  clientAuthMethods: ['client_secret_basic', 'none'],
  subjectTypes: ['pairwise'],
  pkce: { required: () => true },
  scopes: ['openid', 'profile', 'email', 'offline_access'],
  claims: {
    openid: ['sub'],
    profile: ['name', 'given_name', 'family_name'],
    email: ['email'],
  },
  features: {
    devInteractions: { enabled: false },
    revocation: { enabled: true, allowedPolicy: async () => true },
    introspection: { enabled: true, allowedPolicy: async () => true },
    userinfo: { enabled: true },
    rpInitiatedLogout: { enabled: false },
    pushedAuthorizationRequests: { enabled: false },
  },
  interactions: {
    policy,
    url: (ctx, interaction) => `/interaction/${interaction.uid}`,
  },
  routes: { authorization: '/auth', token: '/token', userinfo: '/me', jwks: '/jwks' },
  async findAccount(ctx, id) {
    return {
      accountId: id,
      async claims() {
        return {
          sub: id,
          name: 'Bench User',
          given_name: 'Bench',
          family_name: 'User',
          email: 'bench@example.edu',
        };
      },
    };
  },
  async pairwiseIdentifier(ctx, accountId, client) {
    return crypto.createHmac('sha256', PAIRWISE_SECRET)
      .update(`${client.sectorIdentifier}|${accountId}`).digest('base64url');
  },
  async issueRefreshToken(ctx, client, code) {
    return client.grantTypeAllowed('refresh_token')
      && (client.clientAuthMethod === 'none' || code.scopes.has('offline_access'));
  },
  clientBasedCORS(ctx, origin, client) {
    return ctx.oidc.route === 'userinfo' || client.clientAuthMethod === 'none';
  },
  async renderError(ctx, out) {
    ctx.type = 'json';
    ctx.body = out;
  },
  ttl: {
    AccessToken: HOUR,
    AuthorizationCode: 60,
    IdToken: HOUR,
    Interaction: 10 * 60,
    Session: 14 * DAY,
    Grant: 14 * DAY,
    RefreshToken: 14 * DAY,
    ClientCredentials: 10 * 60,
    DeviceCode: 10 * 60,
    BackchannelAuthenticationRequest: 10 * 60,
  },
};

const provider = new Provider(issuer, configuration);
provider.on('server_error', (ctx, err) => {
  process.stderr.write(`server_error: ${err?.stack || err}\n`);
});

// ---------------------------------------------------------------------------- interaction route
// The bench's stand-in for a login page: whatever the prompt, log the fixed user in and grant the
// requested scopes in one step (no password, no HTML), then 303 back to the authorization endpoint.
async function interaction(req, res) {
  try {
    const details = await provider.interactionDetails(req, res);
    const { params } = details;
    let grant;
    if (details.grantId) grant = await provider.Grant.find(details.grantId);
    if (!grant) grant = new provider.Grant({ accountId: ACCOUNT_ID, clientId: params.client_id });
    grant.addOIDCScope(String(params.scope));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, {
      login: { accountId: ACCOUNT_ID },
      consent: { grantId },
    }, { mergeWithLastSubmission: false });
  } catch (err) {
    res.statusCode = 400;
    res.setHeader('Content-Type', 'text/plain');
    res.end(`interaction failed: ${err.message}`);
  }
}

const callback = provider.callback();
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/interaction/')) {
    interaction(req, res);
  } else {
    callback(req, res);
  }
});

server.listen(port, host, () => {
  process.stdout.write(`${JSON.stringify({
    issuer,
    clients: [
      { client_id: webClient.client_id, client_secret: webClient.client_secret, type: 'web',
        redirect_uris: webClient.redirect_uris },
      { client_id: nativeClient.client_id, type: 'native', redirect_uris: nativeClient.redirect_uris },
    ],
    user: { account_id: ACCOUNT_ID },
  })}\n`);
});

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, () => {
    server.close();
    process.exit(0);
  });
}
