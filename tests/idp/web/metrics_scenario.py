"""A scripted set of sign-ins whose figures are known, for the /metrics tests (in process and
against `campusid serve --workers 2`), and a reader of the Prometheus text format.

The script, with CAMPUSID_LIMIT_FAILED_PER_ACCOUNT at 2 per window: alice signs in (success),
her code is exchanged, her refresh token is refreshed and then presented again (a reuse), her
code is presented again (a replay); bob gets his password wrong twice (two failures) and his
third submission is refused by the account limit (limited)."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.idp.helpers import PASSWORD, auth_params, code_exchange, form_fields, login_through_pages

FAILED_LIMIT = "2/15 minutes"
METRICS_TOKEN = "m" * 20 + "-metrics-token-for-tests-0123456789"
EXPECTED = {
    ("campusid_logins_total", (("outcome", "success"),)): 1,
    ("campusid_logins_total", (("outcome", "failure"),)): 2,
    ("campusid_logins_total", (("outcome", "limited"),)): 1,
    ("campusid_tokens_issued_total", (("grant_type", "authorization_code"),)): 1,
    ("campusid_tokens_issued_total", (("grant_type", "refresh_token"),)): 1,
    ("campusid_code_replays_total", ()): 1,
    ("campusid_refresh_reuse_total", ()): 1,
    ("campusid_rate_limited_total", (("limit", "failed_per_account"),)): 1,
}


def samples(text: str) -> dict:
    """{(sample name, sorted label pairs): value} of a Prometheus text exposition."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def scrape(client: httpx.Client, url: str, token: str = METRICS_TOKEN) -> dict:
    r = client.get(url, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, (r.status_code, r.text[:300])
    assert r.headers["content-type"].startswith("text/plain")
    return samples(r.text)


def password_attempt(client: httpx.Client, issuer: str, client_id: str, redirect: str, username: str, password: str):
    """One submission of the login form of a fresh authorization request; the response."""
    origin = issuer.split("/", 3)[:3]
    flow = auth_params(client_id, redirect, scope="openid")
    r = client.get(f"{issuer}/oauth/authorize", params=flow.params)
    assert r.status_code == 200 and 'id="login-form"' in r.text, (r.status_code, r.text[:300])
    action, fields = form_fields(r.text, "login-form")
    return client.post("/".join(origin) + action, data={**fields, "username": username, "password": password})


def run_script(client: httpx.Client, issuer: str, client_id: str, redirect: str) -> dict:
    """Run the script through `client` (a browser for the pages, also the app for the token
    endpoint); the secrets it saw, by name, for the log tests."""
    flow = auth_params(client_id, redirect, scope="openid offline_access")
    cb = login_through_pages(client, issuer, flow, "alice")
    exchange = code_exchange(flow, cb["code"], redirect, client_id)
    tokens = client.post(f"{issuer}/oauth/token", data=exchange)
    assert tokens.status_code == 200, tokens.text
    first = tokens.json()
    refresh = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": client_id}
    second = client.post(f"{issuer}/oauth/token", data=refresh)
    assert second.status_code == 200, second.text
    reused = client.post(f"{issuer}/oauth/token", data=refresh)
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    replayed = client.post(f"{issuer}/oauth/token", data=exchange)
    assert replayed.status_code == 400 and replayed.json()["error"] == "invalid_grant"
    client.cookies.clear()  # a browser without alice's session
    for _ in range(2):
        wrong = password_attempt(client, issuer, client_id, redirect, "bob", "not the password")
        assert wrong.status_code == 401, wrong.status_code
    limited = password_attempt(client, issuer, client_id, redirect, "bob", PASSWORD)
    assert limited.status_code == 429, limited.status_code
    return {
        "password": PASSWORD,
        "code": cb["code"],
        "code_verifier": flow.verifier,
        "access_token": first["access_token"],
        "id_token": first["id_token"],
        "refresh_token": first["refresh_token"],
        "refresh_token_2": second.json()["refresh_token"],
        "access_token_2": second.json()["access_token"],
    }


def delta(after: dict, before: dict) -> dict:
    return {key: after.get(key, 0) - before.get(key, 0) for key in EXPECTED}
