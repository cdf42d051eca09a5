"""End to end: two `campusid serve` processes share one database and one Redis, so the login
frequency limit holds across them (docs/configuration.md). Real HTTP, real sockets, no controlled time:
every request here falls well inside the windows."""

from __future__ import annotations

import hashlib
import html
import re

import httpx
import pytest

from tests.conftest import REDIS_URL, free_port, run_cli, start_server
from tests.idp.helpers import PASSWORD

WRONG = "not the password"
NATIVE = "e2e-native"


@pytest.fixture
def two_servers(idp_env, redis_client):
    """Two workers of one deployment: same issuer, database, secret key and Redis."""
    port_a, port_b = free_port(), free_port()
    issuer = f"http://127.0.0.1:{port_a}"
    env = {
        **idp_env,
        "CAMPUSID_ISSUER": issuer,
        "CAMPUSID_REDIS_URL": REDIS_URL,
        "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "9/15 minutes",
        "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "5/minute",
    }
    for name, role in (("alice", "student"), ("bob", "student"), ("dev", "developer"), ("admin", "admin")):
        run_cli(env, "users", "add", name, "--name", name.title(), "--role", role, "--password-stdin", stdin=PASSWORD)
    run_cli(env, "apps", "create", "--name", "E2E desktop", "--type", "native", "--client-id", NATIVE,
            "--redirect-uri", "http://127.0.0.1/callback", "--owner", "dev", "--json")  # fmt: skip
    run_cli(env, "apps", "submit", NATIVE, "--json")
    run_cli(env, "apps", "approve", NATIVE, "--by", "admin", "--json")
    run_cli(env, "apps", "activate", NATIVE, "--json")
    servers = []
    try:
        servers.append(start_server(env, port=port_a))
        servers.append(start_server(env, port=port_b))
        yield f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"
    finally:
        for server in servers:
            server.stop()
        namespace = "campusid:" + hashlib.sha256(issuer.encode()).hexdigest()[:16]
        for key in redis_client.scan_iter(match=f"{namespace}:*"):
            redis_client.delete(key)


class Browser:
    """One browser; its cookies are per host, so it may talk to either worker."""

    def __init__(self) -> None:
        self.http = httpx.Client(follow_redirects=False, timeout=30)
        self.csrf = ""

    def open_login(self, base: str) -> None:
        r = self.http.get(f"{base}/login")
        if r.status_code == 303:  # a sign-in of its own, at its own address
            r = self.http.get(base + r.headers["location"])
        assert r.status_code == 200, r.text[:300]
        self.csrf = html.unescape(re.search(r'name="csrf_token" value="([^"]*)"', r.text).group(1))

    def submit(self, base: str, username: str, password: str, **headers: str) -> httpx.Response:
        data = {"csrf_token": self.csrf, "username": username, "password": password}
        return self.http.post(f"{base}/login", data=data, headers=headers)


def test_account_and_ip_limits_hold_across_two_workers_sharing_redis(two_servers):
    a, b = two_servers
    attacker = Browser()
    attacker.open_login(a)
    answers = [attacker.submit(server, "alice", WRONG).status_code for server in (a, b, a, b, a)]
    assert answers == [401] * 5  # five ordinary failures, wherever they land: alice is now locked
    r = attacker.submit(b, "alice", PASSWORD)  # the 6th attempt, on the other worker, right password
    assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 900
    assert "Too many sign-in attempts" in r.text and "campusid_session" not in r.headers.get("set-cookie", "")

    bob = Browser()
    bob.open_login(b)
    assert bob.submit(b, "bob", PASSWORD).status_code == 303  # submission 7 from this IP: bob is fine
    bob.open_login(a)
    assert bob.submit(a, "bob", WRONG).status_code == 401  # 8
    assert bob.submit(b, "bob", WRONG).status_code == 401  # 9: the IP's last one
    forged = {"X-Forwarded-For": "192.0.2.77"}
    for server in (a, b):  # 10th and on: the IP is out, and a forged X-Forwarded-For changes nothing
        r = bob.submit(server, "bob", PASSWORD, **forged)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1


def test_token_limit_holds_across_two_workers_sharing_redis(two_servers):
    a, b = two_servers
    form = {"grant_type": "refresh_token", "refresh_token": "bogus", "client_id": NATIVE}
    with httpx.Client(timeout=30) as http:
        for server in (a, b, a, b, a):
            r = http.post(f"{server}/oauth/token", data=form)
            assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
        for server in (b, a):
            r = http.post(f"{server}/oauth/token", data=form)
            assert r.status_code == 429
            assert 1 <= int(r.headers["retry-after"]) <= 60
            assert r.json()["error"] == "slow_down"
