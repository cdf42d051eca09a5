"""End to end: `campusid serve` with CAMPUSID_REDIS_URL pointing at nothing. Password logins fail
closed with 503, Retry-After and a human message; a token refresh and discovery go on; the
server's log says so in a line or two for a burst of 20 logins, never a traceback per request."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import active_app, add_users, free_port, start_server
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, form_fields, login_through_pages

pytestmark = pytest.mark.e2e
REDIRECT = "http://127.0.0.1:41999/callback"


def test_with_redis_unreachable_logins_get_503_and_refresh_and_discovery_go_on(idp_env):
    add_users(idp_env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
    client_id = active_app(idp_env, "native", "native", "http://127.0.0.1/callback", "openid")["client_id"]
    port = free_port()
    env = {**idp_env, "CAMPUSID_ISSUER": f"http://127.0.0.1:{port}"}
    issuer = env["CAMPUSID_ISSUER"]

    before = start_server(env, port=port)  # while the counters were reachable (in memory)
    try:
        flow = auth_params(client_id, REDIRECT, scope="openid")
        with httpx.Client() as browser:
            code = login_through_pages(browser, issuer, flow, "alice")["code"]
        tokens = httpx.post(f"{issuer}/oauth/token", data=code_exchange(flow, code, REDIRECT, client_id)).json()
    finally:
        before.stop()

    server = start_server({**env, "CAMPUSID_REDIS_URL": "redis://127.0.0.1:1/0"}, port=port)  # nothing listens
    try:
        for _ in range(20):
            with httpx.Client() as browser:
                flow = auth_params(client_id, REDIRECT, scope="openid")
                page = browser.get(f"{issuer}/oauth/authorize", params=flow.params, follow_redirects=True)
                action, fields = form_fields(page.text, "login-form")
                r = browser.post(issuer + action, data={**fields, "username": "alice", "password": PASSWORD})
            assert r.status_code == 503, r.text[:300]
            assert 1 <= int(r.headers["retry-after"]) <= 60
            assert "Sign-in is temporarily unavailable" in r.text and "Too many" not in r.text
        refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}
        r = httpx.post(f"{issuer}/oauth/token", data=refresh)
        assert r.status_code == 200 and r.json()["access_token"]
        r = httpx.get(f"{issuer}/.well-known/openid-configuration")
        assert r.status_code == 200 and r.json()["issuer"] == issuer
    finally:
        server.stop()
    log = server.proc.stderr.read()
    assert "Traceback" not in log
    lines = [line for line in log.splitlines() if "rate-limit" in line]
    assert 1 <= len(lines) <= 2, log[-2000:]
    assert len(log) < 4000, log[-2000:]  # the whole log of the run, start-up lines included
