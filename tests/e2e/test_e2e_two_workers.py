"""Scale-out: two `campusid serve` processes on one database. A flow begun on one
completes on the other, and 20 concurrent redemptions spread over both still have one winner.
With CAMPUSID_DATABASE_URL set to PostgreSQL this is the production shape; on SQLite the two
processes share the WAL-mode file."""

import threading

import httpx
import pytest

from tests.conftest import active_app, add_users, start_server
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, login_through_pages

pytestmark = pytest.mark.e2e
REDIRECT = "http://127.0.0.1/callback"


@pytest.fixture
def two_servers(idp_env):
    add_users(idp_env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
    app = active_app(idp_env, "n", "native", REDIRECT)
    # One issuer for both, as behind a load balancer; each listens on its own port.
    env = {**idp_env, "CAMPUSID_ISSUER": "http://127.0.0.1:1"}
    a, b = start_server(env), start_server(env)
    a.url = "http://127.0.0.1:" + a.proc.args[-1]
    b.url = "http://127.0.0.1:" + b.proc.args[-1]
    yield a, b, app["client_id"]
    a.stop()
    b.stop()


def _rebase(url: str, issuer: str, base: str) -> str:
    return base + url[len(issuer) :] if url.startswith(issuer) else url


class Balancer(httpx.BaseTransport):
    """Sends each request to the next worker in turn, like a round-robin load balancer."""

    def __init__(self, issuer: str, bases: list[str]) -> None:
        self.issuer, self.bases, self.n = issuer, bases, 0
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        base = self.bases[self.n % len(self.bases)]
        self.n += 1
        request.url = httpx.URL(_rebase(str(request.url), self.issuer, base))
        return self.inner.handle_request(request)


def test_flow_begun_on_one_worker_completes_on_the_other(two_servers):
    a, b, client_id = two_servers
    issuer = "http://127.0.0.1:1"
    redirect = "http://127.0.0.1:41000/callback"
    balancer = Balancer(issuer, [a.url, b.url])
    with httpx.Client(transport=balancer) as browser:
        flow = auth_params(client_id, redirect, scope="openid")
        cb = login_through_pages(browser, issuer, flow, "alice")
        assert "code" in cb, cb
        assert balancer.n >= 4  # the steps really alternated between the workers
        tokens = browser.post(f"{issuer}/oauth/token", data=code_exchange(flow, cb["code"], redirect, client_id)).json()
        for _ in range(2):  # userinfo on both workers
            r = browser.get(f"{issuer}/oauth/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"})
            assert r.status_code == 200 and r.json()["sub"]
        refreshed = browser.post(
            f"{issuer}/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id},
        )
        assert refreshed.status_code == 200


def test_concurrent_redemptions_across_workers_have_one_winner(two_servers):
    a, b, client_id = two_servers
    issuer = "http://127.0.0.1:1"
    redirect = "http://127.0.0.1:41001/callback"
    with httpx.Client(transport=Balancer(issuer, [a.url, b.url])) as browser:
        flow = auth_params(client_id, redirect, scope="openid")
        cb = login_through_pages(browser, issuer, flow, "alice")
    data = code_exchange(flow, cb["code"], redirect, client_id)
    barrier = threading.Barrier(20)
    statuses: list[int] = []
    lock = threading.Lock()

    def redeem(base: str) -> None:
        with httpx.Client() as c:
            barrier.wait()
            r = c.post(f"{base}/oauth/token", data=data, timeout=30)
        with lock:
            statuses.append(r.status_code)

    threads = [threading.Thread(target=redeem, args=([a.url, b.url][i % 2],)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200] + [400] * 19
