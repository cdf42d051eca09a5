"""The deployment as it would run (docs/deployment.md): Debian's nginx with deploy/nginx/campusid.conf
terminating TLS (a certificate from a CA the test makes) in front of the command line of
deploy/systemd/campusid.service — `campusid serve --workers 2` — with the example environment file's
settings (CAMPUSID_TRUSTED_PROXIES among them), on PostgreSQL and a Redis of the test's own. Only
ports, paths and secrets are the test's."""

from __future__ import annotations

import ssl
from urllib.parse import urlsplit

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.conftest import active_app, add_users
from tests.deploy.stack import behind_nginx
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, form_fields, login_through_pages

pytestmark = pytest.mark.e2e
REDIRECT = "http://127.0.0.1:41999/callback"
ATTEMPTS_PER_IP = 4


@pytest.fixture
def deployment(tmp_path):
    """nginx → campusid serve --workers 2 → PostgreSQL + Redis; yields (issuer, env, ca path)."""
    settings = {
        "CAMPUSID_ARGON2_MEMORY_COST": "8192",
        "CAMPUSID_ARGON2_TIME_COST": "1",
        "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": f"{ATTEMPTS_PER_IP}/15 minutes",
    }
    with behind_nginx(tmp_path, settings) as stack:
        yield stack.issuer, stack.env, stack.ca
    log = stack.log()
    assert "Traceback" not in log, log[-3000:]
    error_log = stack.nginx.error_log()
    assert "[error]" not in error_log and "[crit]" not in error_log, error_log


def browser(ca, address: str) -> httpx.Client:
    """A client that trusts only the test's CA and connects from `address` (any 127/8 address is
    this host's own), so nginx sees a client other than itself."""
    context = ssl.create_default_context(cafile=str(ca))
    return httpx.Client(transport=httpx.HTTPTransport(verify=context, local_address=address), timeout=60)


def test_sign_in_through_nginx_over_https_on_two_workers(deployment):
    issuer, env, ca = deployment
    add_users(env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
    client_id = active_app(env, "native", "native", "http://127.0.0.1/callback", "openid", "profile")["client_id"]

    with browser(ca, "127.0.0.2") as client:
        discovery = client.get(f"{issuer}/.well-known/openid-configuration").json()
        assert discovery["issuer"] == issuer
        for endpoint in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"):
            assert discovery[endpoint].startswith(issuer + "/"), discovery[endpoint]
        r = client.get(f"{issuer}/.well-known/openid-configuration")
        assert r.headers["strict-transport-security"].startswith("max-age=")

        flow = auth_params(client_id, REDIRECT, scope="openid profile")
        callback = login_through_pages(client, issuer, flow, "alice")
        assert callback["iss"] == issuer and callback["state"] == flow.params["state"]
        tokens = client.post(f"{issuer}/oauth/token", data=code_exchange(flow, callback["code"], REDIRECT, client_id))
        assert tokens.status_code == 200, tokens.text
        body = tokens.json()
        jwks = KeySet.import_key_set(client.get(discovery["jwks_uri"]).json())
        claims = jwt.decode(body["id_token"], jwks, algorithms=["RS256"]).claims
        assert claims["iss"] == issuer and claims["aud"] == client_id
        info = client.get(f"{issuer}/oauth/userinfo", headers={"Authorization": f"Bearer {body['access_token']}"})
        assert info.status_code == 200 and info.json()["sub"] == claims["sub"]


def test_session_cookies_are_secure_and_redirects_stay_on_https(deployment):
    issuer, env, ca = deployment
    add_users(env, PASSWORD, ("bob", "student"), ("dev", "developer"), ("admin", "admin"))
    client_id = active_app(env, "native", "native", "http://127.0.0.1/callback", "openid")["client_id"]
    with browser(ca, "127.0.0.2") as client:
        flow = auth_params(client_id, REDIRECT, scope="openid")
        page = client.get(f"{issuer}/oauth/authorize", params=flow.params, follow_redirects=True)
        assert str(page.url).startswith(issuer + "/") and page.status_code == 200
        action, fields = form_fields(page.text, "login-form")
        origin = f"https://{urlsplit(issuer).netloc}"
        r = client.post(origin + action, data={**fields, "username": "bob", "password": PASSWORD})
        assert r.status_code == 303
        location = r.headers["location"]
        assert location.startswith("/") or location.startswith(issuer + "/"), location  # never http://
        set_cookies = r.headers.get_list("set-cookie")
        assert set_cookies and all("; Secure" in c and "HttpOnly" in c for c in set_cookies), set_cookies


def test_the_login_limit_counts_the_client_behind_nginx_and_ignores_a_forged_forwarded_for(deployment):
    """nginx appends the peer's address to X-Forwarded-For; campusid believes it because nginx's
    address is in CAMPUSID_TRUSTED_PROXIES, and takes the right-most address that is not a trusted
    proxy. A client that sends its own X-Forwarded-For (a new address each time) is counted under
    its real address all the same, and another client is not counted with it."""
    issuer, env, ca = deployment
    add_users(env, PASSWORD, ("carol", "student"), ("dev", "developer"), ("admin", "admin"))
    client_id = active_app(env, "native", "native", "http://127.0.0.1/callback", "openid")["client_id"]
    origin = f"https://{urlsplit(issuer).netloc}"

    def attempt(client: httpx.Client, username: str, password: str, forged: str | None = None) -> httpx.Response:
        flow = auth_params(client_id, REDIRECT, scope="openid")
        page = client.get(f"{issuer}/oauth/authorize", params=flow.params, follow_redirects=True)
        action, fields = form_fields(page.text, "login-form")
        headers = {"X-Forwarded-For": forged} if forged else {}
        return client.post(
            origin + action, data={**fields, "username": username, "password": password}, headers=headers
        )

    with browser(ca, "127.0.0.2") as attacker:
        for n in range(ATTEMPTS_PER_IP):
            r = attempt(attacker, f"nobody{n}", "wrong", forged=f"203.0.113.{n + 1}")
            assert r.status_code not in (429, 503) and r.status_code < 500, r.status_code
        r = attempt(attacker, "nobody-else", "wrong", forged="198.51.100.77, 127.0.0.1")
        assert r.status_code == 429, r.status_code
        assert 1 <= int(r.headers["retry-after"]) <= 15 * 60
        r = attempt(attacker, "carol", PASSWORD, forged="192.0.2.1")
        assert r.status_code == 429  # the right password too: the address is over its limit

    with browser(ca, "127.0.0.3") as someone_else:
        r = attempt(someone_else, "carol", PASSWORD)
        assert r.status_code == 303, (r.status_code, r.text[:300])
