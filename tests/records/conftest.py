"""Records API fixtures: the in-process IdP of tests/idp with the demo grades imported, and real
access tokens obtained through the login pages and the token endpoint."""

from __future__ import annotations

import time
from importlib import resources

import pytest
from joserfc import jwt

from campusid.idp.oidc.rules.tokens import records_audience
from campusid.records.importer import import_csv
from tests.idp.conftest import ISSUER, NATIVE_REDIRECT, WEB_REDIRECT, IdP
from tests.idp.helpers import auth_params, basic, code_exchange, login_through_pages, run

GRADES_URL = "/records/v1/grades"


@pytest.fixture
def records_idp(idp_env):
    """The in-process IdP of tests/idp (alice, native-app with grades.read, web-app without) plus
    the demo grades."""
    instance = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER})
    data = resources.files("campusid.records").joinpath("demo_grades.csv").read_bytes()
    report = run(instance.store, import_csv(instance.store, data))
    assert report.ok, report.errors
    yield instance
    instance.store.close()


@pytest.fixture
def web(records_idp):
    with records_idp.client() as c:
        yield c


def native_tokens(idp, web, scope: str = "openid profile grades.read", username: str = "alice") -> dict:
    """A real token response for the native client (which may be granted grades.read)."""
    redirect = NATIVE_REDIRECT.replace("127.0.0.1", "127.0.0.1:40123")
    flow = auth_params(idp.native_id, redirect, scope=scope)
    cb = login_through_pages(web, idp.issuer, flow, username)
    r = web.post(
        "/oauth/token",
        data=code_exchange(flow, cb["code"], redirect, idp.native_id),
    )
    assert r.status_code == 200, r.text
    return r.json()


def web_tokens(idp, web) -> dict:
    """A real token response for the web client, which was never granted grades.read."""
    flow = auth_params(idp.web_id, WEB_REDIRECT, scope="openid profile")
    cb = login_through_pages(web, idp.issuer, flow, "alice")
    r = web.post(
        "/oauth/token",
        data=code_exchange(flow, cb["code"], WEB_REDIRECT),
        headers=basic(idp.web_id, idp.web_secret),
    )
    assert r.status_code == 200, r.text
    return r.json()


def claims_of(idp, token: str) -> dict:
    """The claims of one of our access tokens, its signature checked with the IdP's own keys."""
    return dict(jwt.decode(token, run(idp.store, idp.ctx.keys.verification_keys())).claims)


def sign_with_real_key(idp, claims: dict, *, header: dict | None = None) -> str:
    """Sign arbitrary claims with the IdP's real ES256 access-token key (to test claim checks alone)."""
    key = idp.ctx.keys.signing_key("ES256")
    return jwt.encode({"alg": "ES256", "kid": key.kid, "typ": "at+jwt", **(header or {})}, claims, key)


def good_claims(idp, base: dict, **changes) -> dict:
    now = int(time.time())
    claims = {**base, "iat": now, "exp": now + 300, **changes}
    claims.setdefault("aud", [idp.issuer, records_audience(idp.issuer)])
    return {k: v for k, v in claims.items() if v is not None}
