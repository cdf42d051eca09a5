"""PostgreSQL restarted under CAS load (docs/cas.md, as every flow must: docs/security.md): `campusid serve
--workers 2` on a PostgreSQL cluster of the test's own, browsers signing in to a CAS app with their
session and each ticket validated by two validators at once. While the database is down the
validation endpoints answer INTERNAL_ERROR inside a 200 body (the protocol's way, never a 500) and
/cas/login the 503 page with Retry-After; no ticket is ever validated twice; the service recovers
by itself within seconds of the database's return."""

from __future__ import annotations

import asyncio
import collections
import os
import secrets
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.conftest import add_users, free_port, run_cli, stop_process
from tests.idp.helpers import PASSWORD, form_fields
from tests.services import Postgres

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
BIN = Path(sys.executable).parent
SERVICE = "https://portal.example.edu/portal/"
NS = {"cas": "http://www.yale.edu/tp/cas"}
RECOVERY_LIMIT = 10.0


class CasLoad:
    """Browsers with a session, each getting tickets and having each validated by two at once."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer
        self.answers: list[tuple[float, str, int | str, str]] = []  # (when, kind, status, CAS outcome)
        self.successes: collections.Counter[str] = collections.Counter()
        self.stop = False

    def note(self, kind: str, status, outcome: str = "") -> None:
        self.answers.append((time.monotonic(), kind, status, outcome))

    async def browser_loop(self) -> None:
        async with httpx.AsyncClient(base_url=self.issuer, timeout=10) as browser:
            r = await browser.get("/cas/login", params={"service": SERVICE})
            action, fields = form_fields(r.text, "login-form")
            await browser.post(action, data={**fields, "username": "alice", "password": PASSWORD})
            while not self.stop:
                try:
                    r = await browser.get("/cas/login", params={"service": SERVICE})
                except httpx.HTTPError as exc:
                    self.note("login", type(exc).__name__)
                    await asyncio.sleep(0.05)
                    continue
                self.note("login", r.status_code, r.headers.get("retry-after", ""))
                if r.status_code != 302:
                    await asyncio.sleep(0.05)
                    continue
                [ticket] = parse_qs(urlsplit(r.headers["location"]).query)["ticket"]
                await asyncio.gather(self.validate(ticket), self.validate(ticket))

    async def validate(self, ticket: str) -> None:
        async with httpx.AsyncClient(base_url=self.issuer, timeout=10) as c:
            try:
                r = await c.get("/cas/p3/serviceValidate", params={"service": SERVICE, "ticket": ticket})
            except httpx.HTTPError as exc:
                self.note("validate", type(exc).__name__)
                return
        outcome = "?"
        if r.status_code == 200:
            root = ET.fromstring(r.text)
            failure = root.find("cas:authenticationFailure", NS)
            outcome = failure.get("code") if failure is not None else "success"
            if outcome == "success":
                self.successes[ticket] += 1
        self.note("validate", r.status_code, outcome)

    def recovered_at(self, since: float) -> float | None:
        """When a login and a validation had both succeeded after `since`."""
        firsts = {}
        for at, kind, status, outcome in self.answers:
            if at >= since and kind not in firsts and status in (200, 302) and outcome in ("success", ""):
                firsts[kind] = at
        return max(firsts.values()) if len(firsts) == 2 else None


@pytest.fixture
def cas_deployment(tmp_path):
    postgres = Postgres()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPUSID_")}
    env.update(
        {
            "CAMPUSID_ISSUER": f"http://127.0.0.1:{port}",
            "CAMPUSID_DATA_DIR": str(tmp_path / "data"),
            "CAMPUSID_DATABASE_URL": postgres.new_database(),
            "CAMPUSID_SECRET_KEY": secrets.token_urlsafe(48),
            "CAMPUSID_ARGON2_MEMORY_COST": "8192",
            "CAMPUSID_ARGON2_TIME_COST": "1",
            "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "100000/hour",
        }
    )
    add_users(env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
    run_cli(env, "apps", "create", "--name", "Portal", "--type", "cas", "--service", SERVICE, "--owner", "dev",
            "--client-id", "portal")  # fmt: skip
    for step in (["submit"], ["approve", "--by", "admin"], ["activate"]):
        run_cli(env, "apps", step[0], "portal", *step[1:])
    log_path = tmp_path / "serve.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [str(BIN / "campusid"), "serve", "--port", str(port), "--workers", "2"], env=env, stdout=log, stderr=log
    )
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, log_path.read_text()
        try:
            if httpx.get(f"{env['CAMPUSID_ISSUER']}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "campusid did not start"
        time.sleep(0.1)
    try:
        yield env["CAMPUSID_ISSUER"], postgres, log_path
    finally:
        stop_process(proc, 30)
        log.close()
        postgres.destroy()


def test_postgresql_restarted_under_cas_load(cas_deployment):
    issuer, postgres, log_path = cas_deployment
    load = CasLoad(issuer)
    times: dict[str, float | None] = {}

    async def run():
        loops = [asyncio.create_task(load.browser_loop()) for _ in range(3)]
        await asyncio.sleep(3)
        times["start"] = time.monotonic()
        await asyncio.to_thread(postgres.stop)
        await asyncio.sleep(2)  # the outage itself
        await asyncio.to_thread(postgres.start)
        times["end"] = time.monotonic()
        deadline = time.monotonic() + RECOVERY_LIMIT + 20
        while (recovered := load.recovered_at(times["end"])) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        times["recovered"] = recovered
        await asyncio.sleep(2)
        load.stop = True
        await asyncio.gather(*loops)

    asyncio.run(run())
    statuses = collections.Counter((kind, status, outcome) for _, kind, status, outcome in load.answers)
    print(f"[CAS, PostgreSQL restarted] {len(load.answers)} answers: {dict(statuses)}")
    validations = [(s, o) for _, kind, s, o in load.answers if kind == "validate"]
    assert all(s == 200 for s, _ in validations), [v for v in validations if v[0] != 200][:10]
    assert ("validate", 200, "INTERNAL_ERROR") in statuses, statuses  # the outage was seen, inside a 200
    logins = {s for _, kind, s, _ in load.answers if kind == "login"}
    assert logins <= {302, 503}, logins  # a ticket, or the 503 page with Retry-After during the outage
    assert all(o.isdigit() for _, kind, s, o in load.answers if kind == "login" and s == 503)
    assert max(load.successes.values()) == 1, "a ticket was validated twice"
    assert sum(load.successes.values()) > 0
    assert times["recovered"] is not None and times["recovered"] - times["end"] <= RECOVERY_LIMIT
    assert "Traceback" not in log_path.read_text(), log_path.read_text()[-3000:]
