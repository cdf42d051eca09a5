"""The token endpoint rules (RFC 6749 4.1.3 and 6, RFC 7636 4.6, OIDC Core 3.1.3)."""

import base64
from urllib.parse import quote_plus

import pytest

from campusid.idp.store.rows import ClientEvent
from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import auth_params, basic, login_through_pages


def web_code(idp, browser, **extra):
    flow = auth_params(idp.web_id, WEB_REDIRECT, **extra)
    cb = login_through_pages(browser, idp.issuer, flow, "alice")
    return cb["code"], flow


def native_code(idp, browser, redirect_uri="http://127.0.0.1:40001/callback", scope="openid profile"):
    flow = auth_params(idp.native_id, redirect_uri, scope=scope)
    cb = login_through_pages(browser, idp.issuer, flow, "alice")
    return cb["code"], flow


def exchange_web(idp, browser, code, flow, **overrides):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": flow.params["redirect_uri"],
        "code_verifier": flow.verifier,
        **overrides,
    }
    data = {k: v for k, v in data.items() if v is not None}
    return browser.post("/oauth/token", data=data, headers=basic(idp.web_id, idp.web_secret))


def test_web_client_exchange_with_basic(idp, browser):
    code, flow = web_code(idp, browser)
    r = exchange_web(idp, browser, code, flow)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] > 0 and body["scope"] == "openid profile"
    assert "refresh_token" not in body  # web clients only with offline_access
    assert r.headers["cache-control"] == "no-store"
    assert "access-control-allow-origin" not in r.headers


def test_wrong_verifier_fails_and_consumes_the_code(idp, browser):
    code, flow = web_code(idp, browser)
    r = exchange_web(idp, browser, code, flow, code_verifier="x" * 50)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = exchange_web(idp, browser, code, flow)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_missing_verifier_fails(idp, browser):
    code, flow = web_code(idp, browser)
    r = exchange_web(idp, browser, code, flow, code_verifier=None)
    assert r.json()["error"] == "invalid_grant"


def test_different_redirect_uri_fails(idp, browser):
    code, flow = web_code(idp, browser)
    r = exchange_web(idp, browser, code, flow, redirect_uri=WEB_REDIRECT + "/other")
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_native_loopback_port_must_be_the_same_at_the_token_endpoint(idp, browser):
    code, flow = native_code(idp, browser, "http://127.0.0.1:40001/callback")
    r = browser.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": "http://127.0.0.1:40002/callback",
            "client_id": idp.native_id,
            "code_verifier": flow.verifier,
        },
    )
    assert r.json()["error"] == "invalid_grant"


def test_another_clients_code_is_invalid_grant(idp, browser):
    code, flow = native_code(idp, browser)
    r = exchange_web(idp, browser, code, flow, redirect_uri=flow.params["redirect_uri"])
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


@pytest.mark.parametrize(
    "header",
    [
        "Basic " + base64.b64encode(b"web-app:wrong").decode(),
        "Basic " + base64.b64encode(b"no-such:secret").decode(),
        "Basic " + base64.b64encode(b"native-app:").decode(),
        "Basic !!!notbase64",
        "Basic " + base64.b64encode(b"no-colon").decode(),
        "Basic " + base64.b64encode(b"\xff\xfe:\xff").decode(),
        "Bearer abc",
        "Basic",
    ],
)
def test_bad_basic_credentials_are_401_with_www_authenticate(idp, browser, header):
    code, flow = web_code(idp, browser)
    r = browser.post(
        "/oauth/token",
        headers={"Authorization": header},
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": WEB_REDIRECT,
            "code_verifier": flow.verifier,
        },
    )
    assert r.status_code == 401
    assert r.json()["error"] == "invalid_client"
    assert r.headers["www-authenticate"].startswith("Basic")
    # The failed authentication did not consume the code.
    assert exchange_web(idp, browser, code, flow).status_code == 200


def test_a_suspended_client_is_refused_without_consuming_its_code(idp, browser):
    code, flow = web_code(idp, browser)

    def move(from_state: str, to_state: str) -> None:
        assert idp.db.apps.move(ClientEvent(None, idp.web_id, "t", "t", from_state, to_state, None, 0))

    move("active", "suspended")
    r = exchange_web(idp, browser, code, flow)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    move("suspended", "active")
    assert exchange_web(idp, browser, code, flow).status_code == 200


def test_a_public_client_presenting_a_secret_is_refused_without_consuming_its_code(idp, browser):
    code, flow = native_code(idp, browser)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": flow.params["redirect_uri"],
        "code_verifier": flow.verifier,
    }
    r = browser.post("/oauth/token", data=form, headers=basic(idp.native_id, "made-up"))
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    r = browser.post("/oauth/token", data={**form, "client_id": idp.native_id})
    assert r.status_code == 200, r.text


def test_web_client_cannot_skip_authentication_or_post_its_secret(idp, browser):
    code, flow = web_code(idp, browser)
    base = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": WEB_REDIRECT,
        "code_verifier": flow.verifier,
    }
    for data in ({**base, "client_id": idp.web_id}, {**base, "client_id": idp.web_id, "client_secret": idp.web_secret}):
        r = browser.post("/oauth/token", data=data)
        assert r.status_code == 401 and r.json()["error"] == "invalid_client"


def test_second_redemption_fails_and_revokes_the_first_tokens(idp, browser):
    code, flow = web_code(idp, browser)
    first = exchange_web(idp, browser, code, flow)
    assert first.status_code == 200
    access = first.json()["access_token"]
    assert browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {access}"}).status_code == 200
    again = exchange_web(idp, browser, code, flow)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    r = browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {access}"})
    assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]


def test_expired_code_is_invalid_grant(idp, browser, monkeypatch):
    code, flow = web_code(idp, browser)
    import time as real_time

    later = real_time.time() + idp.settings.code_ttl + 1
    monkeypatch.setattr("campusid.idp.oidc.token.time.time", lambda: later)
    assert exchange_web(idp, browser, code, flow).json()["error"] == "invalid_grant"


def test_native_client_gets_a_rotating_refresh_token_and_reuse_revokes_the_family(idp, browser):
    code, flow = native_code(idp, browser)
    r = browser.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": flow.params["redirect_uri"],
            "client_id": idp.native_id,
            "code_verifier": flow.verifier,
        },
    )
    assert r.status_code == 200
    first = r.json()
    r = browser.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": idp.native_id},
    )
    assert r.status_code == 200, r.text
    second = r.json()
    assert second["refresh_token"] != first["refresh_token"]
    # Reusing the first refresh token is detected: the whole family is revoked.
    r = browser.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": first["refresh_token"], "client_id": idp.native_id},
    )
    assert r.json()["error"] == "invalid_grant"
    r = browser.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": second["refresh_token"], "client_id": idp.native_id},
    )
    assert r.json()["error"] == "invalid_grant"
    r = browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {second['access_token']}"})
    assert r.status_code == 401


def test_refresh_cannot_widen_scope(idp, browser):
    code, flow = native_code(idp, browser)
    tokens = browser.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": flow.params["redirect_uri"],
            "client_id": idp.native_id,
            "code_verifier": flow.verifier,
        },
    ).json()
    r = browser.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": idp.native_id,
            "scope": "openid grades.read",
        },
    )
    assert r.json()["error"] == "invalid_scope"


def test_unsupported_grant_type(idp, browser):
    r = browser.post(
        "/oauth/token",
        data={"grant_type": "password", "username": "a", "password": "b"},
        headers=basic(idp.web_id, idp.web_secret),
    )
    assert r.status_code == 400 and r.json()["error"] == "unsupported_grant_type"


def test_secret_with_reserved_characters_is_form_encoded_before_base64(idp):
    from campusid.idp.oidc.rules.client_auth import parse_basic

    secret = "a:b+c%d é"
    raw = f"{quote_plus('my:client')}:{quote_plus(secret)}".encode()
    assert parse_basic("Basic " + base64.b64encode(raw).decode()) == ("my:client", secret)


def test_revocation_ends_the_grant(idp, browser):
    code, flow = native_code(idp, browser)
    tokens = browser.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": flow.params["redirect_uri"],
            "client_id": idp.native_id,
            "code_verifier": flow.verifier,
        },
    ).json()
    r = browser.post("/oauth/revoke", data={"token": tokens["refresh_token"], "client_id": idp.native_id})
    assert r.status_code == 200
    assert (
        browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"}).status_code == 401
    )
    # Unknown tokens are fine too (RFC 7009 2.2).
    assert browser.post("/oauth/revoke", data={"token": "nope", "client_id": idp.native_id}).status_code == 200


def test_introspection_for_the_web_client(idp, browser):
    code, flow = web_code(idp, browser)
    tokens = exchange_web(idp, browser, code, flow).json()
    r = browser.post(
        "/oauth/introspect", data={"token": tokens["access_token"]}, headers=basic(idp.web_id, idp.web_secret)
    )
    assert r.status_code == 200 and r.json()["active"] is True and r.json()["client_id"] == idp.web_id
    r = browser.post("/oauth/introspect", data={"token": "garbage"}, headers=basic(idp.web_id, idp.web_secret))
    assert r.json() == {"active": False}
    r = browser.post("/oauth/introspect", data={"token": tokens["access_token"], "client_id": idp.native_id})
    assert r.status_code == 401


def test_cors_on_the_token_endpoint_only_for_public_clients(idp, browser):
    code, flow = native_code(idp, browser)
    r = browser.post(
        "/oauth/token",
        headers={"Origin": "http://127.0.0.1:40001"},
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": flow.params["redirect_uri"],
            "client_id": idp.native_id,
            "code_verifier": flow.verifier,
        },
    )
    assert r.headers["access-control-allow-origin"] == "http://127.0.0.1:40001"
    pre = browser.options(
        "/oauth/token", headers={"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    )
    assert "authorization" not in pre.headers["access-control-allow-headers"].lower()
    code, flow = web_code(idp, browser)
    r = exchange_web(idp, browser, code, flow)
    assert "access-control-allow-origin" not in r.headers
