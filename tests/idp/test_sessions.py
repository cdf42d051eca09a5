"""Server-side sessions and cookies (issue 2, item 6)."""

from campusid.idp.crypto import token_hash
from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import auth_params, login_through_pages


def test_session_cookie_flags_on_http_loopback(idp, browser):
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    raw = browser.cookies.get("campusid_session")
    assert raw and len(raw) >= 43
    assert idp.store.sessions.get(token_hash(raw), 0) is not None  # stored hashed, server-side
    assert idp.store.sessions.get(raw, 0) is None


def test_secure_host_prefixed_cookie_under_https(idp_env):
    from starlette.testclient import TestClient

    from campusid.idp.app import create_app
    from campusid.idp.settings import load_settings

    app = create_app(load_settings({**idp_env, "CAMPUSID_ISSUER": "https://login.example.edu"}))
    with TestClient(app, base_url="https://login.example.edu", follow_redirects=False) as c:
        r = c.get("/login")
    cookie = r.headers["set-cookie"]
    assert cookie.startswith("__Host-campusid_interaction=")
    for flag in ("HttpOnly", "Secure", "SameSite=lax", "Path=/"):
        assert flag.lower() in cookie.lower()
    assert "domain" not in cookie.lower()
    app.state.ctx.store.close()


def test_login_rotates_the_session_and_logout_ends_it_server_side(idp, browser):
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    first = browser.cookies.get("campusid_session")
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT, prompt="login"), "alice")
    second = browser.cookies.get("campusid_session")
    assert first != second
    assert idp.store.sessions.get(token_hash(first), 0) is None  # the old session ended
    page = browser.get("/logout").text
    from tests.idp.helpers import form_fields

    action, fields = form_fields(page, "logout-form")
    assert browser.post(action, data=fields).status_code == 200
    assert idp.store.sessions.get(token_hash(second), 0) is None
    r = browser.get("/oauth/authorize", params=auth_params(idp.web_id, WEB_REDIRECT, prompt="none").params)
    assert "error=login_required" in r.headers["location"]


def test_logout_without_csrf_keeps_the_session(idp, browser):
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    raw = browser.cookies.get("campusid_session")
    r = browser.post("/logout", data={"csrf_token": "forged"})
    assert r.status_code == 403
    assert idp.store.sessions.get(token_hash(raw), 0) is not None


def test_auth_time_and_max_age(idp, browser):
    from joserfc import jwt

    flow = auth_params(idp.web_id, WEB_REDIRECT)
    cb = login_through_pages(browser, idp.issuer, flow, "alice")
    r = browser.post(
        "/oauth/token",
        auth=(idp.web_id, idp.web_secret),
        data={
            "grant_type": "authorization_code",
            "code": cb["code"],
            "redirect_uri": WEB_REDIRECT,
            "code_verifier": flow.verifier,
        },
    )
    claims = jwt.decode(r.json()["id_token"], idp.ctx.keys.verification_keys()).claims
    session = idp.store.sessions.get(token_hash(browser.cookies.get("campusid_session")), 0)
    assert claims["auth_time"] == session["auth_time"]
    r = browser.get("/oauth/authorize", params=auth_params(idp.web_id, WEB_REDIRECT, max_age="3600").params)
    assert "code=" in r.headers["location"]
