"""The device authorization grant across two `campusid serve` processes on one database (on
PostgreSQL with CAMPUSID_DATABASE_URL set, the production shape; else a shared SQLite file): the
code is issued by one worker and approved through the other, and of 20 concurrent redemptions of
the approved device code, spread over both workers, exactly one gets tokens."""

from __future__ import annotations

import threading

import httpx
import pytest

from campusid.idp.oidc.rules.device_grant import GRANT_TYPE
from tests.conftest import start_server
from tests.e2e.test_e2e_two_workers import Balancer
from tests.idp.device_helpers import decide, prepare

pytestmark = pytest.mark.e2e
ISSUER = "http://127.0.0.1:1"  # one issuer for both workers, as behind a load balancer


@pytest.fixture
def two_workers(idp_env):
    prepare(
        idp_env, "lab-bot", people=(("alice", "student"), ("dev", "developer"), ("admin", "admin")), scopes=("openid",)
    )
    env = {**idp_env, "CAMPUSID_ISSUER": ISSUER}
    a, b = start_server(env), start_server(env)
    urls = ["http://127.0.0.1:" + s.proc.args[-1] for s in (a, b)]
    yield urls, "lab-bot"
    a.stop()
    b.stop()


def test_twenty_concurrent_redemptions_across_two_workers_have_one_winner(two_workers):
    (a, b), client_id = two_workers
    started = httpx.post(f"{a}/oauth/device_authorization", data={"client_id": client_id, "scope": "openid"})
    assert started.status_code == 200, started.text
    code = started.json()
    with httpx.Client(transport=Balancer(ISSUER, [b, a])) as person:
        outcome = decide(person, ISSUER, code["user_code"])
    assert 'data-outcome="allowed"' in outcome.text
    data = {"grant_type": GRANT_TYPE, "device_code": code["device_code"], "client_id": client_id}
    barrier = threading.Barrier(20)
    answers: list[tuple[int, str]] = []
    lock = threading.Lock()

    def redeem(base: str) -> None:
        with httpx.Client() as c:
            barrier.wait()
            r = c.post(f"{base}/oauth/token", data=data, timeout=30)
        with lock:
            answers.append((r.status_code, r.json().get("error", "tokens")))

    threads = [threading.Thread(target=redeem, args=([a, b][i % 2],)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(answers) == [(200, "tokens")] + [(400, "invalid_grant")] * 19
