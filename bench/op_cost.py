#!/usr/bin/env python3
"""What one token exchange and one SSO flow cost campusid in process, without a server or a
load generator: the ASGI app called directly (as uvicorn would call it), so the figures do not
depend on what else the machine runs.

    .venv/bin/python bench/op_cost.py seed DIR            # users and a web client, via the CLI
    .venv/bin/python bench/op_cost.py seed DIR --grants 1000000   # and a grown grants table (SQLite)
    .venv/bin/python bench/op_cost.py run DIR [--ops N] [--repeats R] [--only token|sso]
    .venv/bin/python bench/op_cost.py statements DIR      # the SQL statements of each operation
    .venv/bin/python bench/op_cost.py figures DIR --ops 500 --repeats 48   # what metrics cost
    .venv/bin/python bench/op_cost.py load DIR --pid PID --ops 1000   # RSS of a running serve
    OP_COST_CALLGRIND=1 valgrind --tool=callgrind --callgrind-out-file=OUT.%p \\
        .venv/bin/python bench/op_cost.py run DIR --ops 200 --repeats 1
        # OUT.<pid>.1 holds 200 token exchanges, OUT.<pid>.2 200 SSO flows (callgrind_annotate)

`figures` measures what the figures behind /metrics cost: two apps in this one process on the
same database, one with /metrics on (CAMPUSID_METRICS_TOKEN) and one without, served windows of
`--ops` operations in turn (ABBA, `--repeats` windows in all), so both see the same machine,
caches and database; it prints the median CPU time per operation of each and the difference.

`run` prints the CPU time per operation (median of R windows of N operations each; SSO: authorize
with the session cookie, then the token exchange). `statements` prints each SQL statement one
operation runs (SQLite: every statement through sqlite3's trace callback; PostgreSQL
(CAMPUSID_DATABASE_URL): the count of transactions and statements is not traced here).
With CAMPUSID_METRICS_TOKEN in the environment the figures are collected as `campusid serve`
collects them with one worker (in memory); with PROMETHEUS_MULTIPROC_DIR set too, in files as
with several workers. Works on any commit whose `create_app(settings)` serves the same endpoints,
so the same script measures the code before and after a change.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

OP_COST_WIDTH = int(os.environ.get("OP_COST_WIDTH", "200"))
PASSWORD = "bench-password-123"
ISSUER = "http://127.0.0.1:8000"


def _env(data: Path) -> dict:
    saved = json.loads((data / "op_cost.json").read_text()) if (data / "op_cost.json").exists() else {}
    env = {
        "CAMPUSID_DATA_DIR": str(data),
        "CAMPUSID_ISSUER": ISSUER,
        "CAMPUSID_SECRET_KEY": saved.get("secret_key", ""),
        "CAMPUSID_LOG_FORMAT": "text",
    }
    return env


RAISED = {
    # the bench's raised limits (bench/run.py RAISED_LIMITS): the limiter runs, it never refuses
    "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "1000000/second",
    "CAMPUSID_LIMIT_FAILED_PER_ACCOUNT": "1000000/second",
    "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "1000000/second",
    "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "1000000/second",
}


def seed(data: Path, grants: int = 0) -> None:
    data.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(48)
    (data / "op_cost.json").write_text(json.dumps({"secret_key": key}))
    env = {**os.environ, **_env(data)}
    env.pop("CAMPUSID_DATABASE_URL", None) if "OP_COST_PG" not in os.environ else None
    cli = str(Path(sys.executable).parent / "campusid")

    def run(*args: str, stdin: str | None = None) -> str:
        r = subprocess.run([cli, *args], input=stdin, capture_output=True, text=True, env=env, check=False)
        if r.returncode:
            raise SystemExit(f"campusid {' '.join(args)}: {r.stderr[-800:]}")
        return r.stdout

    run("users", "add", "admin", "--name", "Admin", "--role", "admin", "--password-stdin", stdin=PASSWORD + "\n")
    run("users", "add", "dev", "--name", "Dev", "--role", "developer", "--password-stdin", stdin=PASSWORD + "\n")
    run("users", "add", "bench", "--name", "Bench User", "--student-number", "20269999", "--password-stdin",
        stdin=PASSWORD + "\n")  # fmt: skip
    out = run("apps", "create", "--name", "Bench web", "--type", "web", "--redirect-uri",
              "https://rp.example/callback", "--owner", "dev", "--json")  # fmt: skip
    app = json.loads(out[out.index("{") :])
    for step in (("submit",), ("approve", "--by", "admin"), ("activate",)):
        run("apps", step[0], app["client_id"], *step[1:], "--json")
    saved = json.loads((data / "op_cost.json").read_text())
    saved["client"] = {"client_id": app["client_id"], "client_secret": app["client_secret"]}
    (data / "op_cost.json").write_text(json.dumps(saved))
    if grants:
        if "OP_COST_PG" in os.environ:
            raise SystemExit("--grants grows a SQLite database only")
        grow(data / "campusid.db", app["client_id"], grants)
    print(f"seeded {data}: client {app['client_id']}" + (f", {grants:,} old grants" if grants else ""))


def grow(db: Path, client_id: str, n: int, users: int = 100_000, days: int = 30) -> None:
    """`n` spent grants (code redeemed, no refresh token) of `users` random users, one per sign-in,
    made evenly over the past `days`: the grants table of a grown deployment (issue 28). Their ids
    are made as the measured commit makes them (time-ordered where it has protocol/ids.py, else
    random), so the table's B-trees are shaped like that commit's own after `days` of use."""
    import sqlite3

    try:
        from campusid.idp.oidc.rules.grant_ids import new_grant_id
    except ImportError:  # before time-ordered ids: 128 random bits, as new_token(16) made them

        def new_grant_id(now_ms: int) -> str:
            return secrets.token_urlsafe(16)

    now = int(time.time())
    start = now - days * 86400
    uids = [secrets.token_hex(16) for _ in range(users)]

    def rows():
        for i in range(n):
            made_ms = start * 1000 + i * days * 86400 * 1000 // n
            at = made_ms // 1000
            yield (new_grant_id(made_ms), secrets.token_hex(32), client_id, secrets.choice(uids),
                   "https://rp.example/callback", "c" * 43, None, "openid", at, at, at + 60, at + 1, None,
                   secrets.token_urlsafe(16), "pwd", "urn:campusid:acr:pwd")  # fmt: skip

    conn = sqlite3.connect(db)
    try:
        conn.executemany(
            "INSERT INTO grants (id, code_hash, client_id, user_id, redirect_uri, code_challenge, nonce, scope, "
            "auth_time, created_at, code_expires_at, code_used_at, revoked_at, sid, amr, acr) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows(),
        )
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


class Client:
    """A minimal ASGI client: one request at a time, a cookie jar, no redirects followed."""

    def __init__(self, app) -> None:
        self.app = app
        self.cookies: dict[str, str] = {}

    async def request(self, method: str, target: str, body: bytes = b"", headers: list | None = None):
        parts = urlsplit(target)
        hdrs = [(b"host", b"127.0.0.1:8000"), *(headers or [])]
        if self.cookies:
            hdrs.append((b"cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items()).encode()))
        if body:
            hdrs.append((b"content-type", b"application/x-www-form-urlencoded"))
            hdrs.append((b"content-length", str(len(body)).encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": parts.path,
            "raw_path": parts.path.encode(),
            "root_path": "",
            "query_string": parts.query.encode(),
            "headers": hdrs,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        sent = False

        async def receive():
            nonlocal sent
            if sent:
                await asyncio.Event().wait()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        out = {"status": 0, "headers": [], "body": b""}

        async def send(message):
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
                out["headers"] = message.get("headers", [])
            elif message["type"] == "http.response.body":
                out["body"] += message.get("body", b"")

        await self.app(scope, receive, send)
        for name, value in out["headers"]:
            if name.lower() == b"set-cookie":
                pair = value.decode().split(";", 1)[0]
                k, _, v = pair.partition("=")
                if v:
                    self.cookies[k.strip()] = v
                else:
                    self.cookies.pop(k.strip(), None)
        return out


def _header(res, name: bytes) -> str | None:
    for k, v in res["headers"]:
        if k.lower() == name:
            return v.decode()
    return None


def _hidden(html: str, form_id: str) -> dict:
    m = re.search(rf'<form\b[^>]*id="{form_id}"[^>]*>(.*?)</form>', html, re.S)
    if not m:
        return {}
    fields = {}
    for tag in re.findall(r"<input\b([^>]*)>", m.group(1)):
        if 'type="hidden"' in tag:
            name = re.search(r'name="([^"]*)"', tag)
            value = re.search(r'value="([^"]*)"', tag)
            if name:
                fields[name.group(1)] = (value.group(1) if value else "").replace("&amp;", "&")
    return fields


class HTTPClient(Client):
    """The same interface over real HTTP/1.1 (one keep-alive connection), for `load`."""

    def __init__(self, url: str) -> None:
        import http.client

        self.cookies = {}
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port)

    async def request(self, method: str, target: str, body: bytes = b"", headers: list | None = None):
        hdrs = {k.decode(): v.decode() for k, v in headers or []}
        if self.cookies:
            hdrs["cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if body:
            hdrs["content-type"] = "application/x-www-form-urlencoded"
        self.conn.request(method, target, body=body or None, headers=hdrs)
        res = self.conn.getresponse()
        out = {"status": res.status, "headers": [(k.lower().encode(), v.encode()) for k, v in res.getheaders()]}
        out["body"] = res.read()
        for name, value in out["headers"]:
            if name == b"set-cookie":
                k, _, v = value.decode().split(";", 1)[0].partition("=")
                if v:
                    self.cookies[k.strip()] = v
                else:
                    self.cookies.pop(k.strip(), None)
        return out


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _load(data: Path, url: str, pid: int, ops: int) -> None:
    """SSO flows over HTTP against a running `campusid serve` (its data dir seeded by `seed`);
    the server's RSS before and after every `ops` flows."""
    client = json.loads((data / "op_cost.json").read_text())["client"]
    flows = Flows(None, client)
    flows.http = HTTPClient(url)
    print(f"RSS after start: {_rss_mb(pid):.1f} MB")
    await flows.login()
    for round_ in range(1, 4):
        for _ in range(ops):
            await flows.exchange(await flows.code())
        print(f"RSS after {round_ * ops} SSO flows (+ the login): {_rss_mb(pid):.1f} MB")


class Flows:
    def __init__(self, app, client: dict) -> None:
        self.http = Client(app)
        self.client = client
        cred = f"{client['client_id']}:{client['client_secret']}".encode()
        self.basic = [(b"authorization", b"Basic " + base64.b64encode(cred))]

    def _authorize_url(self) -> tuple[str, dict]:
        verifier = secrets.token_urlsafe(32)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        g = {"verifier": verifier, "state": secrets.token_urlsafe(16), "nonce": secrets.token_urlsafe(16)}
        q = {
            "client_id": self.client["client_id"],
            "redirect_uri": "https://rp.example/callback",
            "response_type": "code",
            "scope": "openid",
            "state": g["state"],
            "nonce": g["nonce"],
            "code_challenge": challenge,
            "code_challenge_method": "S256",
        }
        return "/oauth/authorize?" + urlencode(q), g

    def _code(self, res, g: dict) -> dict:
        loc = _header(res, b"location") or ""
        q = parse_qs(urlsplit(loc).query)
        assert res["status"] in (302, 303) and q.get("state") == [g["state"]], (res["status"], res["body"][:300])
        g["code"] = q["code"][0]
        return g

    async def login(self) -> None:
        url, g = self._authorize_url()
        res = await self.http.request("GET", url)
        for _ in range(4):
            if res["status"] in (302, 303) and (_header(res, b"location") or "").startswith("https://rp.example/"):
                await self.exchange(self._code(res, g))
                return
            if res["status"] in (302, 303):
                loc = urlsplit(_header(res, b"location"))
                res = await self.http.request("GET", loc.path + ("?" + loc.query if loc.query else ""))
                continue
            html = res["body"].decode()
            fields = _hidden(html, "login-form")
            if fields:
                fields.update(username="bench", password=PASSWORD)
                res = await self.http.request("POST", "/login", urlencode(fields).encode())
                continue
            fields = _hidden(html, "consent-form")
            assert fields, html[:500]
            fields["decision"] = "allow"
            res = await self.http.request("POST", "/consent", urlencode(fields).encode())
        raise AssertionError("login did not end with a code")

    async def code(self) -> dict:
        url, g = self._authorize_url()
        return self._code(await self.http.request("GET", url), g)

    async def exchange(self, g: dict) -> None:
        body = urlencode(
            {
                "grant_type": "authorization_code",
                "code": g["code"],
                "redirect_uri": "https://rp.example/callback",
                "code_verifier": g["verifier"],
            }
        ).encode()
        res = await self.http.request("POST", "/oauth/token", body, self.basic)
        assert res["status"] == 200, res["body"][:300]
        assert b"id_token" in res["body"]


class _Lifespan:
    def __init__(self, app) -> None:
        self.app = app
        self.queue: asyncio.Queue = asyncio.Queue()
        self.started = asyncio.Event()
        self.done = asyncio.Event()

    async def _send(self, message):
        if message["type"].startswith("lifespan.startup"):
            self.started.set()
        if message["type"].startswith("lifespan.shutdown"):
            self.done.set()

    async def __aenter__(self):
        await self.queue.put({"type": "lifespan.startup"})
        self.task = asyncio.create_task(self.app({"type": "lifespan", "asgi": {"version": "3.0"}}, self.queue.get,
                                                 self._send))  # fmt: skip
        await self.started.wait()

    async def __aexit__(self, *exc):
        await self.queue.put({"type": "lifespan.shutdown"})
        await self.done.wait()
        await self.task


def _settings(data: Path):
    """The settings of the measured app: this data directory, the bench's raised limits."""
    os.environ.update({**_env(data), **RAISED})
    if "OP_COST_PG" not in os.environ:
        os.environ.pop("CAMPUSID_DATABASE_URL", None)
    from campusid.idp.settings import load_settings

    return load_settings()


def _app(data: Path):
    from campusid.idp.app import create_app

    return create_app(_settings(data))


def _callgrind(option: str) -> None:
    """Under valgrind --tool=callgrind (OP_COST_CALLGRIND=1): zero the counters before a window,
    dump them after it, so a dump holds exactly the window's operations."""
    if os.environ.get("OP_COST_CALLGRIND"):
        subprocess.run(["callgrind_control", option, str(os.getpid())], check=True, capture_output=True)


async def _window(flows: Flows, name: str, ops: int) -> float:
    """CPU time per operation over `ops` token exchanges (their codes minted before the clock
    starts) or SSO flows (authorize with the session cookie, then the exchange), in microseconds."""
    codes = [await flows.code() for _ in range(ops)] if name == "token" else []
    _callgrind("--zero")
    started = time.process_time()
    if name == "token":
        for g in codes:
            await flows.exchange(g)
    else:
        for _ in range(ops):
            await flows.exchange(await flows.code())
    cost = (time.process_time() - started) / ops * 1e6
    _callgrind(f"--dump={name}")
    return cost


async def _figures(data: Path, ops: int, repeats: int, only: str | None) -> None:
    from dataclasses import replace

    from campusid.idp.app import create_app

    client = json.loads((data / "op_cost.json").read_text())["client"]
    settings = _settings(data)
    apps = {True: create_app(replace(settings, metrics_token="op-cost-" + "m" * 32)), False: create_app(settings)}
    async with _Lifespan(apps[True]), _Lifespan(apps[False]):
        flows = {on: Flows(app, client) for on, app in apps.items()}
        for f in flows.values():
            await f.login()
            for _ in range(200):  # warm every cache and statement
                await f.exchange(await f.code())
        for name in ("token", "sso") if only is None else (only,):
            cost: dict[bool, list[float]] = {True: [], False: []}
            for window in range(repeats):
                on = window % 4 in (0, 3)  # ABBA: neither side always goes first
                cost[on].append(await _window(flows[on], name, ops))
            with_, without = statistics.median(cost[True]), statistics.median(cost[False])
            diff = f"{with_ - without:+.1f} us ({with_ / without - 1:+.1%}; {len(cost[True])} windows each)"
            print(f"{name}: {with_:.1f} us CPU per operation with the figures, {without:.1f} without: {diff}")


async def _run(data: Path, ops: int, repeats: int, only: str | None, statements: bool) -> None:
    client = json.loads((data / "op_cost.json").read_text())["client"]
    trace: list[str] = []
    if statements:
        import sqlite3

        connect = sqlite3.connect

        def traced(*args, **kwargs):
            con = connect(*args, **kwargs)
            con.set_trace_callback(trace.append)
            return con

        sqlite3.connect = traced
    app = _app(data)
    async with _Lifespan(app):
        flows = Flows(app, client)
        await flows.login()
        for _ in range(50):  # warm every cache and statement
            await flows.exchange(await flows.code())
        if statements:
            for label, op in (("token exchange", "token"), ("SSO authorize", "authorize"), ("SSO flow", "sso")):
                g = await flows.code() if op == "token" else None
                trace.clear()
                if op == "token":
                    await flows.exchange(g)
                elif op == "authorize":
                    g = await flows.code()
                else:
                    await flows.exchange(await flows.code())
                print(f"== {label}: {len(trace)} statements")
                for s in trace:
                    print("   ", " ".join(s.split())[:OP_COST_WIDTH])
                if op == "authorize":
                    await flows.exchange(g)
            return
        results: dict[str, list[float]] = {"token": [], "sso": []}
        for _ in range(repeats):
            for name in results if only is None else (only,):
                results[name].append(await _window(flows, name, ops))
        for name, values in results.items():
            if values:
                print(f"{name}: {statistics.median(values):.1f} us CPU per operation (median of {len(values)}: "
                      + " ".join(f"{v:.0f}" for v in values) + ")")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["seed", "run", "statements", "load", "figures"])
    parser.add_argument("data", type=Path)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=["token", "sso"])
    parser.add_argument("--url", help="load: the running server (CAMPUSID_ISSUER=http://127.0.0.1:8000)")
    parser.add_argument("--pid", type=int, help="load: the server process whose RSS is shown")
    parser.add_argument("--grants", type=int, default=0, help="seed: this many old grants (SQLite)")
    args = parser.parse_args()
    if args.command == "seed":
        seed(args.data, args.grants)
        return
    if args.command == "load":
        asyncio.run(_load(args.data, args.url or ISSUER, args.pid, args.ops))
        return
    if args.command == "figures":
        asyncio.run(_figures(args.data, args.ops, args.repeats, args.only))
        return
    asyncio.run(_run(args.data, args.ops, args.repeats, args.only, args.command == "statements"))


if __name__ == "__main__":
    main()
