"""The faults a deployment survives, each under load (tests/faults/load.py: SSO, a code redeemed by
two clients at once, refresh, userinfo, a password login each second) on `campusid serve --workers 2`
with a PostgreSQL cluster and a Redis of the test's own on spare ports, so stopping them disturbs
nothing else: a worker killed, PostgreSQL restarted, Redis down, the signing key rotated.

For each: every answer is a protocol answer (503 with Retry-After where the service cannot answer,
never a 500), no traceback in the server's log, recovery by itself within seconds, no code redeemed
twice and no grant lost. Each test prints requests sent, answers per status and the longest time
to recovery (docs/security.md quotes them)."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from tests.conftest import active_app, add_users, free_port, run_cli, stop_process
from tests.e2e.test_e2e_serve_workers import workers
from tests.faults.load import Load
from tests.idp.helpers import PASSWORD
from tests.services import Postgres, Redis

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
BIN = Path(sys.executable).parent
RECOVERY_LIMIT = 10.0  # seconds from the fault's end to every kind of request succeeding again
KINDS = ("sso", "token", "refresh", "userinfo", "login")


class Deployment:
    def __init__(self, directory: Path) -> None:
        self.postgres = Postgres()
        self.redis = Redis()
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPUSID_")}
        self.env.update(
            {
                "CAMPUSID_ISSUER": self.issuer,
                "CAMPUSID_DATA_DIR": str(directory / "data"),
                "CAMPUSID_DATABASE_URL": self.postgres.new_database(),
                "CAMPUSID_REDIS_URL": self.redis.url,
                "CAMPUSID_SECRET_KEY": secrets.token_urlsafe(48),
                "CAMPUSID_ARGON2_MEMORY_COST": "8192",
                "CAMPUSID_ARGON2_TIME_COST": "1",
                "CAMPUSID_JWKS_MAX_AGE": "2",
                # the load is one client on one address: the limits are not what is under test
                "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "100000/minute",
                "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "100000/hour",
                "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "100000/minute",
            }
        )
        add_users(self.env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
        app = active_app(self.env, "native", "native", "http://127.0.0.1/callback", "openid", "profile")
        self.client_id = app["client_id"]
        self.log_path = directory / "serve.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [str(BIN / "campusid"), "serve", "--port", str(self.port), "--workers", "2"],
            env=self.env,
            stdout=self._log,
            stderr=self._log,
        )
        deadline = time.monotonic() + 60
        while not self._answers():
            assert self.proc.poll() is None, self.log()
            assert time.monotonic() < deadline, "campusid did not start within 60 s"
            time.sleep(0.1)

    def _answers(self) -> bool:
        try:
            return httpx.get(f"{self.issuer}/.well-known/openid-configuration", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def load(self) -> Load:
        return Load(self.issuer, self.client_id)

    def stop(self) -> None:
        stop_process(self.proc, 30)
        self._log.close()
        self.redis.stop()
        self.postgres.destroy()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    d = Deployment(tmp_path_factory.mktemp("faults"))
    try:
        yield d
    finally:
        d.stop()


async def until_recovered(load: Load, since: float, kinds=KINDS, settle: float = 2.0) -> float | None:
    """Wait (polling, up to RECOVERY_LIMIT + 20 s) until every kind has succeeded after `since`,
    then `settle` seconds more of load; the recovery moment or None."""
    deadline = time.monotonic() + RECOVERY_LIMIT + 20
    while time.monotonic() < deadline:
        recovered = load.recovered_at(kinds, since)
        if recovered is not None:
            await asyncio.sleep(settle)
            return recovered
        await asyncio.sleep(0.1)
    return None


def check(load: Load, deployment: Deployment, name: str, start: float, end: float, recovered: float | None) -> None:
    load.report(name, start, end, recovered)
    assert not load.unclean(), [(a.kind, a.status, a.retry_after) for a in load.unclean()][:20]
    assert recovered is not None and recovered - end <= RECOVERY_LIMIT, f"{name}: no recovery"
    assert load.codes_redeemed_twice == 0
    assert load.codes_issued > 0 and load.grants
    lost = asyncio.run(load.grants_lost())
    print(f"[{name}] grants lost: {lost}")
    assert lost == 0
    assert "Traceback" not in deployment.log(), deployment.log()[-3000:]


def test_postgresql_restarted_under_load(deployment):
    load = deployment.load()
    times = {}

    async def fault():
        await asyncio.sleep(3)
        times["start"] = time.monotonic()
        await asyncio.to_thread(deployment.postgres.stop)
        await asyncio.sleep(2)  # the outage itself: the database stays down this long
        await asyncio.to_thread(deployment.postgres.start)
        times["end"] = time.monotonic()
        times["recovered"] = await until_recovered(load, times["end"])

    asyncio.run(load.run(fault))
    during = load.statuses(times["start"], times["end"])
    assert during.get(503, 0) > 0, during  # the outage was seen, and answered 503
    assert load.transport_errors() == [], load.transport_errors()[:10]  # no connection dropped
    check(load, deployment, "PostgreSQL restarted", times["start"], times["end"], times["recovered"])


def test_redis_down_under_load(deployment):
    load = deployment.load()
    times = {}

    async def fault():
        await asyncio.sleep(3)
        times["start"] = time.monotonic()
        await asyncio.to_thread(deployment.redis.stop)
        await asyncio.sleep(4)
        await asyncio.to_thread(deployment.redis.start)
        times["end"] = time.monotonic()
        times["recovered"] = await until_recovered(load, times["end"])

    asyncio.run(load.run(fault))
    logins = [a for a in load.answers if a.kind == "login" and times["start"] + 0.5 <= a.at <= times["end"]]
    assert any(a.status == 503 for a in logins), [a.status for a in logins]  # fail closed...
    assert not any(a.status == 429 for a in logins)  # ...and never "too many attempts"
    tokens = [
        a for a in load.answers if a.kind in ("token", "refresh") and times["start"] + 0.5 <= a.at <= times["end"]
    ]
    assert any(a.status == 200 for a in tokens), [a.status for a in tokens]  # tokens go on
    assert load.transport_errors() == []
    check(load, deployment, "Redis down", times["start"], times["end"], times["recovered"])


def test_a_worker_killed_under_load(deployment):
    load = deployment.load()
    times = {}
    supervisor = deployment.proc.pid

    async def fault():
        await asyncio.sleep(3)
        before = workers(supervisor)
        assert len(before) == 2
        victim = min(before)
        times["start"] = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:  # the supervisor notices (it checks every half second) and starts another
            now = workers(supervisor)
            if len(now) == 2 and victim not in now:
                break
            assert time.monotonic() < deadline, "the killed worker was not replaced"
            await asyncio.sleep(0.1)
        times["end"] = time.monotonic()
        times["recovered"] = await until_recovered(load, times["end"])

    asyncio.run(load.run(fault))
    # What the killed worker had in flight fails (its connections are reset); nothing else does.
    lost_in_flight = load.transport_errors()
    assert len(lost_in_flight) <= 12, lost_in_flight
    assert not load.transport_errors(since=times["end"] + 1.0), "requests failed after the replacement"
    check(load, deployment, "worker killed", times["start"], times["end"], times["recovered"])


def test_keys_rotate_under_load(deployment):
    """A relying party keeps the JWKS it fetched and fetches again only for a `kid` it does not
    know: every ID token issued while keys rotate verifies that way (the new key is published
    before it signs, the old one stays while its tokens live)."""
    load = deployment.load()
    times = {}

    async def fault():
        await asyncio.sleep(2)
        times["start"] = time.monotonic()
        for _ in range(2):
            await asyncio.to_thread(run_cli, deployment.env, "keys", "rotate")
            await asyncio.sleep(4)  # past CAMPUSID_JWKS_MAX_AGE: the new key signs
        times["end"] = time.monotonic()
        times["recovered"] = await until_recovered(load, times["end"], settle=1.0)

    rp = RelyingParty(f"{deployment.issuer}/oauth/jwks")
    load.verify_id_token = rp.verify
    asyncio.run(load.run(fault))
    print(
        f"[keys rotate] ID tokens: {len(load.id_tokens)}; signing keys seen: {len(rp.kids)}; "
        f"JWKS fetches: {rp.fetches}; unverifiable: {load.unverifiable}"
    )
    assert load.unverifiable == 0
    assert len(rp.kids) >= 2, "the load saw no token signed by a rotated key"
    assert load.transport_errors() == []
    check(load, deployment, "keys rotate", times["start"], times["end"], times["recovered"])


class RelyingParty:
    """Verifies ID tokens as a relying party does: with the JWKS it has, fetched again only when a
    token names a `kid` it does not have (OpenID Connect Core 10.1.1)."""

    def __init__(self, jwks_uri: str) -> None:
        self.jwks_uri, self.keys, self.kids, self.fetches = jwks_uri, None, set(), 0

    async def _fetch(self) -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            self.keys = KeySet.import_key_set((await client.get(self.jwks_uri)).json())
        self.fetches += 1

    async def verify(self, token: str) -> bool:
        kid = _header(token).get("kid")
        if self.keys is None or not any(k.kid == kid for k in self.keys):
            await self._fetch()
        try:
            jwt.decode(token, self.keys, algorithms=["RS256"])
        except (JoseError, ValueError):
            return False
        self.kids.add(kid)
        return True


def _header(token: str) -> dict:
    import base64
    import json

    header = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
