"""The long fuzz run (docs/security.md, "Fuzzing"): many requests per second against the deployment
as it runs (tests/deploy/stack.py: nginx with deploy/nginx/campusid.conf → `campusid serve
--workers 2` → PostgreSQL + Redis), from a loopback client speaking HTTP/1.1 over TLS itself so it
can also be a slow or rude one.

Three kinds of traffic, mixed:
- fuzzed requests to every endpoint and page (tests/fuzz/corpus.py, the list the suite's hypothesis
  fuzzer uses), with real values mixed in and mutated;
- stateful sequences, each as one person (a user of its own per connection): sign in through the
  pages, get a code, redeem it (mutated first, duplicated at once on two connections, replayed),
  refresh (the newest token, then a rotated one), userinfo, introspect, revoke, SSO, the device
  grant through /device, the account pages, the management API and the console, sign out. What must
  never work is checked after each step: a code or device code that gives tokens twice, a mutated
  value that works, a rotated or revoked refresh token that works, an access token of an ended grant
  accepted. A sequence's values go to the fuzzer's pool when it ends, to be mutated further;
- slow clients: a request trickled byte by byte, a connection stalled half-way through its headers
  or body (past nginx's client_header_timeout / client_body_timeout, or not), pipelined requests,
  a close right after sending or in the middle of the answer.

Every answer is counted per endpoint and status; its body is searched for a traceback. nginx's
access log (a format with $upstream_status) tells campusid's answers from nginx's own; the
campusid log and nginx's error log are searched at the end. Bounded by a count and a time.

    python -m tests.fuzz.long_run --total 1000000 --seconds 3000   (make fuzz-long)
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import json
import random
import re
import signal
import ssl
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from campusid.idp.oidc.rules.device_grant import GRANT_TYPE
from tests.conftest import active_app
from tests.deploy.stack import Stack, behind_nginx
from tests.fuzz.corpus import ENDPOINTS, Draw, Request
from tests.idp.device_helpers import prepare
from tests.idp.helpers import PASSWORD, auth_params, callback_params, code_exchange, form_fields

CLIENT = "lab-bot"  # native, PKCE, the device grant granted (tests/idp/device_helpers.prepare)
REDIRECT = "http://127.0.0.1/cb"
WEB_REDIRECT = "https://rp.example.edu/cb"
SETTINGS = {
    "CAMPUSID_ARGON2_MEMORY_COST": "8192",
    "CAMPUSID_ARGON2_TIME_COST": "1",
    # not what is under test here (tests/idp/test_ratelimit.py is); a 429 is counted all the same
    "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "1000000/hour",
    "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "1000000/minute",
    "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "1000000/minute",
    "CAMPUSID_LIMIT_FAILED_PER_ACCOUNT": "1000000/hour",
}
ACCESS_FORMAT = "$status $upstream_status $request_method $request_time"
NGINX_PAGE = b"<center>nginx</center>"
TRACEBACK = re.compile(rb"Traceback \(most recent call last\)|File \"[^\"]+\.py\", line \d+")
SEVERE = r"\[(error|crit|alert|emerg)\]"
CLIENT_FAULT = r"client intended to send too large body|client sent [a-z ]+|client timed out|client prematurely closed"
POOL = 200  # values kept per kind for the fuzzer


class Closed(Exception):
    """The server closed the connection before a whole answer."""


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    cookies: list[str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> dict:
        try:
            value = json.loads(self.body)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


def encode(method: str, target: str, host: str, headers: list[tuple[str, bytes]], body: bytes) -> bytes:
    lines = [f"{method} {target} HTTP/1.1".encode(), b"Host: " + host.encode()]
    lines += [name.encode() + b": " + value for name, value in headers]
    if body or method not in ("GET", "HEAD"):
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


async def read_answer(reader: asyncio.StreamReader) -> tuple[Answer, bool]:
    """One HTTP/1.1 answer and whether the server will close the connection after it."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError) as exc:
        raise Closed(type(exc).__name__) from None
    lines = head[:-4].split(b"\r\n")
    status = int(lines[0].split()[1])
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        key, text = name.strip().lower().decode("latin-1"), value.strip().decode("latin-1")
        if key == "set-cookie":
            cookies.append(text)
        headers[key] = text
    try:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")
                    break
                parts.append((await reader.readexactly(size + 2))[:-2])
            body = b"".join(parts)
        elif "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif status in (204, 304) or status < 200:
            body = b""
        else:
            body = await reader.read()
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError) as exc:
        raise Closed(type(exc).__name__) from None
    return Answer(status, headers, cookies, body), headers.get("connection", "").lower() == "close"


@dataclass
class Tally:
    """What the run saw."""

    per_endpoint: collections.Counter = field(default_factory=collections.Counter)  # "METHOD /path" -> n
    per_status: collections.Counter = field(default_factory=collections.Counter)
    slow: collections.Counter = field(default_factory=collections.Counter)  # "behaviour outcome" -> n
    sequences: collections.Counter = field(default_factory=collections.Counter)  # step outcome -> n
    server_errors: list[str] = field(default_factory=list)
    five_per_endpoint: collections.Counter = field(default_factory=collections.Counter)
    tracebacks: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    unexpected_refusals: collections.Counter = field(default_factory=collections.Counter)
    transport: collections.Counter = field(default_factory=collections.Counter)

    @property
    def requests(self) -> int:
        return sum(self.per_endpoint.values())


PATTERNS = [(m, p, re.compile(re.sub(r"\\\{[^}]*\\\}", "[^/]*", re.escape(p)))) for m, p in ENDPOINTS]


def template(method: str, target: str) -> str:
    """The ENDPOINTS entry a request went to (its path with {placeholders}), for the count."""
    path = target.split("?", 1)[0]
    for m, pattern, compiled in PATTERNS:
        if m == method and compiled.fullmatch(path):
            return f"{m} {pattern}"
    return f"{method} {path if len(path) < 40 else path[:40] + '…'}"


class Connection:
    """A keep-alive TLS connection to nginx, opened again when nginx closes it."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(
            "127.0.0.1", self.run.port, ssl=self.run.tls, server_hostname="127.0.0.1", limit=1 << 20
        )

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()
        self.reader = self.writer = None

    async def request(
        self, method: str, target: str, headers: list[tuple[str, bytes]], body: bytes = b""
    ) -> Answer | None:
        data = encode(method, target, self.run.host, headers, body)
        for attempt in range(2):
            if self.writer is None:
                self.reader, self.writer = await self.open()
                fresh = True
            else:
                fresh = False
            try:
                self.writer.write(data)
                await self.writer.drain()
                answer, close = await read_answer(self.reader)
            except (Closed, ConnectionError, ssl.SSLError) as exc:
                await self.close()
                if fresh or attempt:  # a fresh connection that fails is an answer of its own
                    self.run.seen(method, target, None, error=type(exc).__name__)
                    return None
                continue  # nginx closed an idle keep-alive connection: open another
            if close:
                await self.close()
            self.run.seen(method, target, answer)
            return answer
        return None


class Browser:
    """A person's browser: a connection and a cookie jar."""

    def __init__(self, run: Run, connection: Connection) -> None:
        self.run = run
        self.http = connection
        self.cookies: dict[str, str] = {}

    def _headers(self, extra: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
        jar = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return ([("cookie", jar.encode())] if jar else []) + extra

    async def call(self, method: str, target: str, form: dict | None = None, headers=(), body: bytes | None = None):
        extra = list(headers)
        if form is not None:
            body = urlencode(form).encode()
            extra.append(("content-type", b"application/x-www-form-urlencoded"))
        answer = await self.http.request(method, target, self._headers(extra), body or b"")
        if answer is not None:
            for cookie in answer.cookies:
                name, _, rest = cookie.partition("=")
                value = rest.split(";", 1)[0]
                if "max-age=0" in cookie.lower() or not value:
                    self.cookies.pop(name, None)
                else:
                    self.cookies[name] = value
        return answer

    async def follow(self, answer: Answer | None, hops: int = 3) -> Answer | None:
        """Follows the IdP's own redirects (a path on this origin)."""
        while answer is not None and answer.status in (302, 303) and hops:
            location = answer.headers.get("location", "")
            if location.startswith(self.run.issuer):
                location = location[len(self.run.issuer) :]
            if not location.startswith("/"):
                return answer
            answer = await self.call("GET", location)
            hops -= 1
        return answer


class Run:
    def __init__(self, stack: Stack, total: int, seconds: float, concurrency: int, slow: int, seed: int) -> None:
        self.stack = stack
        self.issuer = stack.issuer
        self.host = urlsplit(stack.issuer).netloc
        self.port = urlsplit(stack.issuer).port
        self.tls = ssl.create_default_context(cafile=str(stack.ca))
        self.total, self.seconds, self.concurrency, self.slow_clients = total, seconds, concurrency, slow
        self.seed = seed
        self.tally = Tally()
        self.started = 0.0
        self.pool: dict[str, collections.deque] = collections.defaultdict(lambda: collections.deque(maxlen=POOL))
        self.web_id = ""
        self.web_secret = ""
        self.users: list[tuple[str, str]] = []
        self.ok = False
        self.stopped = False  # by SIGINT or SIGTERM: the loops end, the report is still made

    # -- the bounds -----------------------------------------------------------------------------
    def done(self) -> bool:
        return self.stopped or self.tally.requests >= self.total or time.monotonic() - self.started >= self.seconds

    # -- recording ------------------------------------------------------------------------------
    def seen(self, method: str, target: str, answer: Answer | None, error: str = "") -> None:
        t = self.tally
        t.per_endpoint[template(method, target)] += 1
        if answer is None:
            t.transport[error] += 1
            t.per_status[f"no answer ({error})"] += 1
            return
        t.per_status[answer.status] += 1
        if answer.status >= 500:
            t.five_per_endpoint[template(method, target)] += 1
            who = "nginx" if NGINX_PAGE in answer.body else "campusid"
            t.server_errors.append(f"{answer.status} from {who}: {method} {target[:200]} {answer.body[:300]!r}")
        if TRACEBACK.search(answer.body):
            t.tracebacks.append(f"{method} {target[:200]}: {answer.body[:500]!r}")

    def violation(self, what: str) -> None:
        self.tally.violations.append(what)

    def keep(self, kind: str, *values: str) -> None:
        for value in values:
            if value:
                self.pool[kind].append(value)

    # -- fuzzed requests ------------------------------------------------------------------------
    def real_values(self, rng: random.Random) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
        real = [CLIENT, self.web_id, REDIRECT, "code", "openid profile offline_access", "S256", GRANT_TYPE,
                "authorization_code", "refresh_token", "none", "login consent", "0", "allow", "deny"]  # fmt: skip
        for kind in ("code", "access", "refresh", "id_token", "csrf", "device_code", "user_code", "verifier"):
            if self.pool[kind]:
                real.append(rng.choice(self.pool[kind]))
        placeholders = {"client_id": [CLIENT, self.web_id], "username": [u for u, _ in self.users]}
        cookies = rng.choice(self.pool["session"]) if self.pool["session"] else {}
        return real, placeholders, cookies

    async def fuzz_one(self, draw: Draw, connection: Connection) -> None:
        real, placeholders, cookies = self.real_values(draw.rng)
        req = draw.request(real, placeholders, cookies)
        if draw.rng.random() < 0.01:  # bigger than client_max_body_size: nginx's own 413
            req = Request("POST", "/oauth/token", b"a=" + b"A" * 1_100_000, [("content-type", b"text/plain")])
        await connection.request(req.method, req.path, req.headers, req.body)

    # -- stateful sequences ---------------------------------------------------------------------
    def step(self, name: str) -> None:
        self.tally.sequences[name] += 1

    async def sign_in(self, browser: Browser, username: str, flow) -> str | None:
        """Through the pages: authorize, the login form, consent. The code, or None."""
        answer = await browser.follow(await browser.call("GET", f"/oauth/authorize?{urlencode(flow.params)}"))
        if answer is None or answer.status != 200 or 'id="login-form"' not in answer.text:
            return self._code(answer)
        action, fields = form_fields(answer.text, "login-form")
        answer = await browser.call("POST", action, {**fields, "username": username, "password": PASSWORD})
        for _ in range(3):
            if answer is None:
                return None
            if answer.status in (302, 303) and answer.headers.get("location", "").startswith(REDIRECT):
                return self._code(answer)
            if answer.status in (302, 303):
                answer = await browser.follow(answer, hops=1)
            elif answer.status == 200 and 'id="consent-form"' in answer.text:
                action, fields = form_fields(answer.text, "consent-form")
                self.keep("csrf", fields.get("csrf_token", ""))
                answer = await browser.call("POST", action, {**fields, "decision": "allow"})
            else:
                return None
        return None

    def _code(self, answer: Answer | None) -> str | None:
        if answer is None or answer.status not in (302, 303):
            return None
        return callback_params(answer.headers.get("location", "")).get("code")

    async def sequence(self, rng: random.Random, draw: Draw, a: Connection, b: Connection, user: str) -> None:
        browser = Browser(self, a)
        flow = auth_params(CLIENT, REDIRECT, scope="openid profile offline_access")
        code = await self.sign_in(browser, user, flow)
        if not code:
            self.tally.unexpected_refusals["sign-in gave no code"] += 1
            return
        self.step("signed in")
        grants = []
        grant = await self.redeem(rng, draw, a, b, code, flow)
        if grant:
            grants.append(grant)
        if rng.random() < 0.7:  # SSO: a code from the session alone
            flow = auth_params(CLIENT, REDIRECT, scope="openid profile offline_access")
            answer = await browser.call("GET", f"/oauth/authorize?{urlencode(flow.params)}")
            sso = self._code(answer)
            if sso:
                self.step("SSO code")
                grant = await self.redeem(rng, draw, a, b, sso, flow)
                if grant:
                    grants.append(grant)
            else:
                self.tally.unexpected_refusals["SSO gave no code"] += 1
        for grant in grants:
            await self.use_grant(rng, draw, a, grant)
        if rng.random() < 0.3:
            await self.device(rng, draw, browser, a)
        await self.pages(rng, draw, browser, user)
        self.keep("session", dict(browser.cookies))
        if rng.random() < 0.3:
            answer = await browser.call("GET", "/logout")
            if answer is not None and 'id="logout-form"' in answer.text:
                action, fields = form_fields(answer.text, "logout-form")
                await browser.call("POST", action, fields)
                self.step("signed out")
        for grant in grants:
            self.keep("access", grant["access"])
            self.keep("refresh", grant["refresh"], *grant["old"])
            self.keep("id_token", grant.get("id_token", ""))

    async def redeem(self, rng, draw: Draw, a: Connection, b: Connection, code: str, flow) -> dict | None:
        """The code mutated first (it must not work unless unchanged), then as it is — at once
        on two connections, sometimes — then replayed (RFC 6749 4.1.2: at most once)."""
        form = code_exchange(flow, code, REDIRECT, CLIENT)
        body = urlencode(form).encode()
        headers = [("content-type", b"application/x-www-form-urlencoded")]
        if rng.random() < 0.3:
            sent = draw.mutated(code)
            answer = await a.request("POST", "/oauth/token", headers, urlencode({**form, "code": sent}).encode())
            if answer is not None and answer.status == 200:
                if sent != code:
                    self.violation(f"a mutated code worked: {sent!r} for {code!r}")
                return None
        if rng.random() < 0.3:
            answers = await asyncio.gather(
                a.request("POST", "/oauth/token", headers, body), b.request("POST", "/oauth/token", headers, body)
            )
            self.step("code redeemed twice at once")
        else:
            answers = [await a.request("POST", "/oauth/token", headers, body)]
        won = [x for x in answers if x is not None and x.status == 200]
        if len(won) > 1:
            self.violation(f"a code gave tokens twice at once: {code!r}")
        if not won:
            self.tally.unexpected_refusals["fresh code refused"] += 1
            self.keep("code", code)
            return None
        tokens = won[0].json()
        grant = {"access": tokens.get("access_token", ""), "refresh": tokens.get("refresh_token", ""), "old": [],
                 "id_token": tokens.get("id_token", ""), "alive": len(answers) == 1}  # fmt: skip
        self.keep("verifier", flow.verifier)
        if rng.random() < 0.4:  # a replay: refused, and what the code gave is revoked
            answer = await a.request("POST", "/oauth/token", headers, body)
            if answer is not None and answer.status == 200:
                self.violation(f"a replayed code worked: {code!r}")
            grant["alive"] = False
            self.step("code replayed")
        self.keep("code", code)
        return grant

    async def use_grant(self, rng, draw: Draw, a: Connection, grant: dict) -> None:
        form_type = [("content-type", b"application/x-www-form-urlencoded")]
        for _ in range(rng.randint(1, 4)):
            choice = rng.random()
            if choice < 0.35:  # refresh: the newest, a rotated one, or a mutated one
                which = rng.choice(["newest", "newest", "old", "mutated"])
                token = {"newest": grant["refresh"], "old": grant["old"][-1] if grant["old"] else grant["refresh"],
                         "mutated": draw.mutated(grant["refresh"])}[which]  # fmt: skip
                if token == grant["refresh"]:
                    which = "newest"
                form = {"grant_type": "refresh_token", "refresh_token": token, "client_id": CLIENT}
                answer = await a.request("POST", "/oauth/token", form_type, urlencode(form).encode())
                if answer is None:
                    continue
                if answer.status == 200:
                    if which != "newest" or grant["alive"] is False:
                        self.violation(f"a {which} refresh token of a grant alive={grant['alive']} worked")
                    grant["old"].append(grant["refresh"])
                    body = answer.json()
                    grant["refresh"], grant["access"] = body.get("refresh_token", ""), body.get("access_token", "")
                    grant["alive"] = True
                    self.step("refreshed")
                else:
                    if which == "newest" and grant["alive"] is True:
                        self.tally.unexpected_refusals["newest refresh token refused"] += 1
                    if which in ("newest", "old"):
                        grant["alive"] = False  # reuse of a rotated one ends the family (RFC 9700 4.14.2)
            elif choice < 0.6:
                answer = await a.request(
                    "GET", "/oauth/userinfo", [("authorization", b"Bearer " + grant["access"].encode())]
                )
                if answer is not None and answer.status == 200 and grant["alive"] is False:
                    self.violation("an access token of an ended grant was accepted at userinfo")
            elif choice < 0.8:
                auth = (f"{self.web_id}:{self.web_secret}").encode()
                basic = b"Basic " + base64.b64encode(auth)
                form = {"token": rng.choice([grant["access"], grant["refresh"], draw.mutated(grant["access"])])}
                answer = await a.request("POST", "/oauth/introspect", [*form_type, ("authorization", basic)],
                                         urlencode(form).encode())  # fmt: skip
                if (
                    answer is not None
                    and answer.status == 200
                    and answer.json().get("active")
                    and grant["alive"] is False
                ):
                    self.violation("introspection called a token of an ended grant active")
            else:
                form = {"token": grant["refresh"], "token_type_hint": "refresh_token", "client_id": CLIENT}
                answer = await a.request("POST", "/oauth/revoke", form_type, urlencode(form).encode())
                if answer is not None and answer.status == 200:
                    grant["alive"] = False
                    self.step("revoked")

    async def device(self, rng, draw: Draw, browser: Browser, a: Connection) -> None:
        """RFC 8628: the device asks, the signed-in person enters the code on /device and allows,
        the device's code gives tokens once."""
        form_type = [("content-type", b"application/x-www-form-urlencoded")]
        start = urlencode({"client_id": CLIENT, "scope": "openid profile"}).encode()
        answer = await a.request("POST", "/oauth/device_authorization", form_type, start)
        if answer is None or answer.status != 200:
            self.tally.unexpected_refusals["device authorization refused"] += 1
            return
        codes = answer.json()
        device_code, user_code = codes.get("device_code", ""), codes.get("user_code", "")
        poll = urlencode({"grant_type": GRANT_TYPE, "device_code": device_code, "client_id": CLIENT}).encode()
        answer = await a.request("POST", "/oauth/token", form_type, poll)
        if answer is not None and answer.status == 200:
            self.violation("a device code gave tokens before anyone allowed it")
        page = await browser.call("GET", "/device")
        if page is None or 'id="device-form"' not in page.text:
            return
        action, fields = form_fields(page.text, "device-form")
        typed = user_code if rng.random() < 0.8 else draw.mutated(user_code)
        answer = await browser.follow(await browser.call("POST", action, {**fields, "user_code": typed}))
        if answer is not None and answer.status == 200 and 'id="consent-form"' in answer.text:
            action, fields = form_fields(answer.text, "consent-form")
            await browser.call("POST", action, {**fields, "decision": "allow"})
        won = 0
        for _ in range(2):
            answer = await a.request("POST", "/oauth/token", form_type, poll)
            won += answer is not None and answer.status == 200
        if won > 1:
            self.violation("a device code gave tokens twice")
        self.step(f"device grant ({'tokens' if won else 'no tokens'})")
        self.keep("device_code", device_code)
        self.keep("user_code", user_code)

    async def pages(self, rng, draw: Draw, browser: Browser, user: str) -> None:
        """The account pages, and the console and management API for a developer or admin."""
        answer = await browser.call("GET", "/account")
        if answer is not None and answer.status == 200:
            match = re.search(r'name="csrf_token" value="([^"]+)"', answer.text)
            if match:
                self.keep("csrf", match.group(1))
                csrf = match.group(1) if rng.random() < 0.5 else draw.mutated(match.group(1))
                target = rng.choice(["/account/apps/revoke", "/account/security/factor/remove"])
                await browser.call("POST", target, {"csrf_token": csrf, "client_id": CLIENT, "factor": "totp"})
        await browser.call("GET", "/account/security/totp")
        await browser.call("POST", "/login/mfa", {"otp": str(rng.randint(0, 999999)).zfill(6)})
        answer = await browser.call("GET", "/api/v1/me")
        token = answer.json().get("csrf_token", "") if answer is not None else ""
        self.keep("csrf", token)
        api = [("x-csrf-token", token.encode())]
        for target in rng.sample(["/api/v1/apps", f"/api/v1/apps/{CLIENT}", "/api/v1/reviews", "/api/v1/users",
                                  "/api/v1/audit", "/developer", "/admin", "/admin/apps"], 3):  # fmt: skip
            await browser.call("GET", target, headers=api)
        patch = json.dumps({"description": draw.text()[:500]}).encode()
        await browser.call(
            "PATCH", f"/api/v1/apps/{self.web_id}", headers=[*api, ("content-type", b"application/json")], body=patch
        )
        self.step(f"pages as {user.split('-')[0]}")

    # -- slow and rude clients ------------------------------------------------------------------
    async def slow_one(self, rng: random.Random, draw: Draw) -> None:
        real, placeholders, cookies = self.real_values(rng)
        req = draw.request(real, placeholders, cookies)
        data = encode(req.method, req.path, self.host, req.headers, req.body)[:20000]
        behaviour = rng.choice(["trickle", "trickle", "stall-head", "stall-body", "pause", "pipeline", "close-sent",
                                "close-reading"])  # fmt: skip
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", self.port, ssl=self.tls, server_hostname="127.0.0.1", limit=1 << 20
            )
        except (OSError, ssl.SSLError) as exc:
            self.tally.slow[f"connect failed {type(exc).__name__}"] += 1
            return
        outcome = "?"
        try:
            if behaviour == "trickle":  # headers and body a few bytes at a time
                data = data[:3000]
                for i in range(0, len(data), 4):
                    writer.write(data[i : i + 4])
                    await writer.drain()
                    await asyncio.sleep(0.002)
                outcome = await self._answered(reader, req)
            elif behaviour in ("stall-head", "stall-body"):  # stops past nginx's 10 s timeouts
                post = encode(
                    "POST",
                    "/oauth/token",
                    self.host,
                    [("content-type", b"application/x-www-form-urlencoded")],
                    b"grant_type=refresh_token&refresh_token=" + b"x" * 200,
                )
                cut = post.index(b"\r\n\r\n") // 2 if behaviour == "stall-head" else post.index(b"\r\n\r\n") + 20
                writer.write(post[:cut])
                await writer.drain()
                self.tally.per_endpoint["POST /oauth/token"] += 1
                outcome = await self._stalled(reader)
            elif behaviour == "pause":  # stops 2 s half-way (within the timeouts), then goes on
                half = len(data) // 2
                writer.write(data[:half])
                await writer.drain()
                await asyncio.sleep(2)
                writer.write(data[half:])
                await writer.drain()
                outcome = await self._answered(reader, req)
            elif behaviour == "pipeline":  # three requests in one write, three answers in order
                reqs = [req] + [draw.request(real, placeholders, cookies) for _ in range(2)]
                writer.write(b"".join(encode(r.method, r.path, self.host, r.headers, r.body) for r in reqs))
                await writer.drain()
                outcomes = []
                for r in reqs:
                    outcomes.append(await self._answered(reader, r))
                    if outcomes[-1] != "answered":
                        break
                outcome = "answered" if outcomes == ["answered"] * 3 else "/".join(outcomes)
            elif behaviour == "close-sent":  # the request, then gone
                writer.write(data)
                await writer.drain()
                self.tally.per_endpoint[template(req.method, req.path)] += 1
                outcome = "closed by the client"
            else:  # reads a few bytes of the answer, then gone
                writer.write(encode("GET", "/api/v1/openapi.json", self.host, [], b""))
                await writer.drain()
                await reader.read(100)
                self.tally.per_endpoint["GET /api/v1/openapi.json"] += 1
                outcome = "closed by the client mid-answer"
        except (ConnectionError, ssl.SSLError) as exc:
            outcome = f"connection error {type(exc).__name__}"
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        self.tally.slow[f"{behaviour}: {outcome}"] += 1

    async def _answered(self, reader, req: Request) -> str:
        try:
            answer, _ = await asyncio.wait_for(read_answer(reader), 70)
        except Closed as exc:
            self.seen(req.method, req.path, None, error=str(exc))
            return "closed by nginx"
        except TimeoutError:
            self.seen(req.method, req.path, None, error="TimeoutError")
            return "no answer in 70 s"
        self.seen(req.method, req.path, answer)
        return "answered"

    async def _stalled(self, reader) -> str:
        """What nginx did with a client that stopped: an answer (its status) or a close."""
        started = time.monotonic()
        try:
            answer, _ = await asyncio.wait_for(read_answer(reader), 40)
        except Closed:
            self.tally.per_status["no answer (nginx closed a stalled client)"] += 1
            return f"closed by nginx after {time.monotonic() - started:.0f} s"
        except TimeoutError:
            self.tally.per_status["no answer (stalled 40 s)"] += 1
            return "still open after 40 s"
        self.tally.per_status[answer.status] += 1
        if answer.status >= 500:
            self.tally.server_errors.append(f"{answer.status} to a stalled client: {answer.body[:200]!r}")
        return f"answered {answer.status} after {time.monotonic() - started:.0f} s"

    # -- the loops ------------------------------------------------------------------------------
    async def worker(self, n: int) -> None:
        rng = random.Random(self.seed * 1000 + n)
        draw = Draw(rng)
        a, b = Connection(self), Connection(self)
        user = self.users[n % len(self.users)][0]
        try:
            while not self.done():
                if rng.random() < 0.012:
                    await self.sequence(rng, draw, a, b, user)
                else:
                    await self.fuzz_one(draw, a)
        finally:
            await a.close()
            await b.close()

    async def slow_worker(self, n: int) -> None:
        rng = random.Random(self.seed * 1000 + 500 + n)
        draw = Draw(rng)
        while not self.done():
            await self.slow_one(rng, draw)

    async def progress(self) -> None:
        last, last_at = 0, time.monotonic()
        while not self.done():
            await asyncio.sleep(10)
            now, done = time.monotonic(), self.tally.requests
            rate = (done - last) / (now - last_at)
            left = (self.total - done) / rate if rate else float("inf")
            fives = sum(n for s, n in self.tally.per_status.items() if isinstance(s, int) and s >= 500)
            print(
                f"[fuzz-long] {now - self.started:6.0f} s  {done:9d} requests  {rate:6.0f}/s  "
                f"~{left / 60:5.1f} min left  5xx: {fives}  tracebacks: {len(self.tally.tracebacks)}  "
                f"violations: {len(self.tally.violations)}  sequences: {self.tally.sequences['signed in']}  "
                f"slow: {sum(self.tally.slow.values())}",
                flush=True,
            )
            last, last_at = done, now

    async def main(self) -> None:
        self.started = time.monotonic()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, lambda: setattr(self, "stopped", True))
        tasks = [asyncio.create_task(self.worker(n)) for n in range(self.concurrency)]
        tasks += [asyncio.create_task(self.slow_worker(n)) for n in range(self.slow_clients)]
        ticker = asyncio.create_task(self.progress())
        await asyncio.gather(*tasks)
        ticker.cancel()


def prepare_stack(stack: Stack, concurrency: int) -> tuple[list[tuple[str, str]], str, str]:
    """A person per connection (students, developers, admins), the device-grant native app, a web
    app with a secret (for introspection and Basic authentication)."""
    people = [
        (f"{['student', 'dev', 'admin'][i % 3]}-{i}", ["student", "developer", "admin"][i % 3])
        for i in range(concurrency)
    ]
    prepare(stack.env, CLIENT, people=(("dev", "developer"), ("admin", "admin"), *people),
            scopes=("openid", "profile", "offline_access"))  # fmt: skip
    web = active_app(stack.env, "web", "web", WEB_REDIRECT, "openid", "profile")
    return people, web["client_id"], web.get("client_secret", "")


def access_log_counts(stack: Stack) -> tuple[collections.Counter, collections.Counter]:
    """nginx's access log: answers per status, and per (status, upstream status) for what nginx
    answered itself or logged for a client that went away (408, 499: no upstream answer)."""
    statuses: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    path = stack.nginx.dir / "access.log"
    with path.open("rb") as log:
        for line in log:
            parts = line.split()
            if len(parts) < 2:
                continue
            status, upstream = parts[0].decode(), parts[1].decode()
            statuses[status] += 1
            if upstream == "-" or status in ("408", "499") or status.startswith("5"):
                own[f"{status} (upstream {upstream})"] += 1
    return statuses, own


def report(run: Run, elapsed: float, log_statuses, log_own, log_tracebacks: list[str], nginx_errors: list[str]) -> str:
    t = run.tally
    lines = [
        f"requests: {t.requests} in {elapsed:.0f} s ({t.requests / elapsed:.0f}/s), "
        f"{run.concurrency} connections + {run.slow_clients} slow clients, seed {run.seed}",
        "per status: " + json.dumps(dict(sorted(t.per_status.items(), key=lambda kv: str(kv[0]))), sort_keys=False),
        "per endpoint: " + json.dumps(dict(sorted(t.per_endpoint.items())), sort_keys=False),
        "stateful steps: " + json.dumps(dict(sorted(t.sequences.items()))),
        "slow clients: " + json.dumps(dict(sorted(t.slow.items()))),
        "nginx access log per status: " + json.dumps(dict(sorted(log_statuses.items()))),
        "nginx's own answers and gone clients (no upstream answer): " + json.dumps(dict(sorted(log_own.items()))),
        f"refused where a real value should have worked (not failures: the fuzzer may have ended the session): "
        f"{dict(t.unexpected_refusals)}",
        f"transport errors: {dict(t.transport)}",
        f"5xx per endpoint: {dict(t.five_per_endpoint)}",
        f"5xx answers: {len(t.server_errors)}; tracebacks in bodies: {len(t.tracebacks)}; in campusid's log: "
        f"{len(log_tracebacks)}; nginx [error]/[crit]/[alert] lines: {len(nginx_errors)}; protocol violations: "
        f"{len(t.violations)}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total", type=int, default=1_000_000, help="requests to send")
    parser.add_argument("--seconds", type=float, default=3600, help="stop after this long whatever the count")
    parser.add_argument("--concurrency", type=int, default=24, help="keep-alive connections")
    parser.add_argument("--slow", type=int, default=6, help="slow clients at any time")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--report", type=Path, help="write the report here too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="campusid-fuzz-") as tmp:
        run, elapsed, result = execute(Path(tmp), args)
    print(result, flush=True)
    if args.report:
        args.report.write_text(result + "\n")
    return 0 if run.ok and run.tally.requests >= args.total else 1


def execute(tmp: Path, args) -> tuple[Run, float, str]:
    with behind_nginx(tmp, SETTINGS, ACCESS_FORMAT) as stack:
        run = Run(stack, args.total, args.seconds, args.concurrency, args.slow, args.seed)
        run.users, run.web_id, run.web_secret = prepare_stack(stack, args.concurrency)
        print(
            f"[fuzz-long] {stack.issuer}: {args.total} requests, at most {args.seconds:.0f} s, seed {args.seed}",
            flush=True,
        )
        asyncio.run(run.main())
        elapsed = time.monotonic() - run.started
    log = stack.log()
    log_tracebacks = [
        m.group(0) for m in re.finditer(r"Traceback \(most recent call last\):[^\n]*\n(?:[ \t].*\n)*.*", log)
    ]
    nginx_lines = [line for line in stack.nginx.error_log().splitlines() if re.search(SEVERE, line)]
    # what nginx logs at [error] about a client (a body over client_max_body_size, ...) is the
    # client's doing: counted, not a failure; anything else (an upstream's fault) is
    client_faults = collections.Counter(m.group(0) for line in nginx_lines if (m := re.search(CLIENT_FAULT, line)))
    nginx_errors = [line for line in nginx_lines if not re.search(CLIENT_FAULT, line)]
    run.tally.slow.update({f"nginx [error] about the client: {k}": n for k, n in client_faults.items()})
    statuses, own = access_log_counts(stack)
    t = run.tally
    logged_5xx = sum(n for s, n in statuses.items() if s.startswith("5"))
    run.ok = not (t.server_errors or t.tracebacks or t.violations or log_tracebacks or nginx_errors or logged_5xx)
    result = report(run, elapsed, statuses, own, log_tracebacks, nginx_errors)
    for title, items in (("5xx", t.server_errors), ("traceback in a body", t.tracebacks),
                         ("violation", t.violations), ("traceback in the log", log_tracebacks),
                         ("nginx error", nginx_errors)):  # fmt: skip
        for item in items[:10]:
            result += f"\n{title}: {item[:2000]}"
    return run, elapsed, result


if __name__ == "__main__":
    sys.exit(main())
