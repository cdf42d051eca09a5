"""A `campusid serve` that may use one CPU, as the benchmark runs it: one hashing thread beside
the event loop on that core (idp/passwords.py). Concurrent logins, right and wrong, each get
their own answer over real HTTP, and the ID tokens they lead to verify."""

import os
import threading
from urllib.parse import urlencode

import httpx
import pytest

from tests.conftest import active_app, add_users, start_server
from tests.e2e.test_e2e_code_flow import verify_id_token
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, form_fields, login_through_pages

pytestmark = pytest.mark.e2e

REDIRECT_URI = "http://127.0.0.1:50001/callback"


@pytest.fixture
def one_core_server(idp_env):
    add_users(idp_env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
    app = active_app(idp_env, "native", "native", "http://127.0.0.1/callback", "openid")
    srv = start_server(idp_env, cpus={min(os.sched_getaffinity(0))})
    srv.client_id = app["client_id"]
    yield srv
    srv.stop()


def login(issuer: str, client_id: str, password: str) -> tuple[int, dict | None, object]:
    """A browser's sign-in: the login's status (303 on to the client, 401 refused) and, when it led
    to a code, the token response and the flow."""
    flow = auth_params(client_id, REDIRECT_URI, scope="openid")
    with httpx.Client() as browser:
        if password == PASSWORD:
            cb = login_through_pages(browser, issuer, flow, "alice", password)
        else:
            r = browser.get(f"{issuer}/oauth/authorize?{urlencode(flow.params)}", follow_redirects=True)
            action, fields = form_fields(r.text, "login-form")
            r = browser.post(issuer + action, data={**fields, "username": "alice", "password": password})
            return r.status_code, None, flow
    token = httpx.post(f"{issuer}/oauth/token", data=code_exchange(flow, cb["code"], REDIRECT_URI, client_id))
    assert token.status_code == 200, token.text
    return 303, token.json(), flow


def test_concurrent_logins_on_a_one_core_server_each_get_their_answer(one_core_server):
    srv = one_core_server
    with open(f"/proc/{srv.proc.pid}/status") as status:
        allowed = next(line for line in status if line.startswith("Cpus_allowed_list:"))
    assert allowed.split(":")[1].strip().isdigit()  # the server may use exactly one CPU
    passwords = [PASSWORD] * 6 + ["not the password"] * 2
    results: list = [None] * len(passwords)
    errors: list = []

    def one(i: int) -> None:
        try:
            results[i] = login(srv.issuer, srv.client_id, passwords[i])
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(repr(exc))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(passwords))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert None not in results  # every login finished within its minute
    assert [r[0] for r in results] == [303] * 6 + [401] * 2
    subs = {
        verify_id_token(srv.issuer, tokens["id_token"], srv.client_id, flow.params["nonce"])["sub"]
        for _, tokens, flow in results[:6]
    }
    assert len(subs) == 1  # one user, one pairwise subject for this client
