"""OpenID Connect RP-Initiated Logout 1.0 on the end_session endpoint (/logout): a verified hint
naming this browser's session signs out and returns to the registered URI with `state`; anything
else is confirmed by the user; refused requests get the logout page with a message, never a
redirect, and end the session only if the user then confirms."""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from campusid.idp.crypto import token_hash
from tests.idp.helpers import form_fields
from tests.idp.oidc.logout_helpers import BYE, BYE_QUERY, OTHER_BYE, logout_app, sign_in_to

SESSION = "campusid_session"


@pytest.fixture
def apps(idp):
    return (
        logout_app(idp, "rp1", post_logout=[BYE, BYE_QUERY]),
        logout_app(idp, "rp2", post_logout=[OTHER_BYE]),
    )


def live(idp, browser) -> bool:
    raw = browser.cookies.get(SESSION)
    return raw is not None and idp.db.sessions.get(token_hash(raw), int(time.time())) is not None


def no_redirect_400(r) -> str:
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert "location" not in r.headers
    assert r.headers["content-type"].startswith("text/html")
    return r.text


def test_hint_of_this_session_signs_out_and_returns_with_state(idp, browser, apps):
    tokens = sign_in_to(browser, idp, apps[0])
    r = browser.get(
        "/logout", params={"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": BYE_QUERY, "state": "s 1&x"}
    )
    assert r.status_code == 303
    target = urlsplit(r.headers["location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == BYE
    assert parse_qs(target.query) == {"from": ["idp"], "state": ["s 1&x"]}
    assert not live(idp, browser)
    [event] = idp.db.events.list(type="logout")
    assert event.username == "alice" and event.client_id == "rp1"
    # The refresh token of the session is revoked with it.
    r = browser.post(
        "/oauth/token", auth=apps[0][:2], data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    )
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_post_is_served_like_get(idp, browser, apps):
    tokens = sign_in_to(browser, idp, apps[0])
    r = browser.post("/logout", data={"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": BYE})
    assert r.status_code == 303 and r.headers["location"] == BYE
    assert not live(idp, browser)


def test_without_a_redirect_uri_the_page_says_signed_out(idp, browser, apps):
    tokens = sign_in_to(browser, idp, apps[0])
    r = browser.get("/logout", params={"id_token_hint": tokens["id_token"]})
    assert r.status_code == 200 and 'id="signed-out"' in r.text
    assert not live(idp, browser)


def test_an_expired_hint_is_accepted(idp, browser, apps):
    sign_in_to(browser, idp, apps[0])
    session = idp.db.sessions.get(token_hash(browser.cookies.get(SESSION)), 0)
    old = int(time.time()) - 86400
    key = idp.ctx.keys.signing_key("RS256")
    claims = {
        "iss": idp.issuer,
        "sub": "x",
        "aud": "rp1",
        "iat": old,
        "exp": old + 300,
        "auth_time": old,
        "sid": session.sid,
    }
    hint = jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)
    r = browser.get("/logout", params={"id_token_hint": hint, "post_logout_redirect_uri": BYE, "state": "st"})
    assert r.status_code == 303 and r.headers["location"] == BYE + "?state=st"
    assert not live(idp, browser)


def test_without_a_hint_the_user_confirms_then_returns(idp, browser, apps):
    sign_in_to(browser, idp, apps[0])
    r = browser.get("/logout", params={"client_id": "rp1", "post_logout_redirect_uri": BYE, "state": "abc"})
    assert r.status_code == 200 and "location" not in r.headers
    assert "App rp1" in r.text and live(idp, browser)
    action, fields = form_fields(r.text, "logout-form")
    assert fields["continue_to"] == BYE + "?state=abc"
    # A page cannot change where the confirmation leads: the MAC binds the verified URI.
    forged = browser.post(action, data={**fields, "continue_to": "https://evil.example/"})
    assert forged.status_code == 200 and "location" not in forged.headers and not live(idp, browser)


def test_confirmation_redirects_to_the_verified_uri(idp, browser, apps):
    sign_in_to(browser, idp, apps[0])
    r = browser.get("/logout", params={"client_id": "rp1", "post_logout_redirect_uri": BYE, "state": "abc"})
    action, fields = form_fields(r.text, "logout-form")
    done = browser.post(action, data=fields)
    assert done.status_code == 303 and done.headers["location"] == BYE + "?state=abc"
    assert not live(idp, browser)


def test_hint_of_another_session_asks_first(idp, browser, apps):
    tokens = sign_in_to(browser, idp, apps[0])
    sign_in_to(browser, idp, apps[0])  # prompt=consent keeps the session; sign in again elsewhere:
    other = idp.client()
    sign_in_to(other, idp, apps[0])
    r = other.get("/logout", params={"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": BYE})
    assert r.status_code == 200 and 'id="logout-form"' in r.text and live(idp, other)


def _tamper(token: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sid"] = "someone-else"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"{header}.{forged}.{signature}"


def _unsigned(token: str) -> str:
    _, payload, _ = token.split(".")
    header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    return f"{header}.{payload}."


def _foreign(idp, token: str) -> str:
    _, payload, _ = token.split(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    key = RSAKey.generate_key(2048, parameters={"kid": "foreign"})
    return jwt.encode({"alg": "RS256", "kid": "foreign"}, body, key)


@pytest.mark.parametrize(
    "make, key",
    [
        (lambda idp, t: _tamper(t), "hint"),
        (lambda idp, t: _unsigned(t), "hint"),
        (lambda idp, t: _foreign(idp, t), "hint"),
        (lambda idp, t: "not-a-jwt", "hint"),
        (lambda idp, t: "a" * 10240, "malformed"),
    ],
    ids=["tampered", "alg-none", "foreign-key", "not-a-jwt", "10KB"],
)
def test_bad_hints_are_refused_without_redirect(idp, browser, apps, make, key):
    from campusid.idp.oidc.rules.logout import REFUSALS

    tokens = sign_in_to(browser, idp, apps[0])
    r = browser.get("/logout", params={"id_token_hint": make(idp, tokens["id_token"]), "post_logout_redirect_uri": BYE})
    text = no_redirect_400(r)
    assert str(REFUSALS[key]) in text.replace("&#39;", "'")
    assert live(idp, browser)
    # The user may still sign out on purpose: no redirect follows.
    action, fields = form_fields(text, "logout-form")
    assert "continue_to" not in fields
    done = browser.post(action, data=fields)
    assert done.status_code == 200 and "location" not in done.headers and not live(idp, browser)


def test_unregistered_and_foreign_uris_are_refused(idp, browser, apps):
    tokens = sign_in_to(browser, idp, apps[0])
    for uri in ("https://rp1.example.edu/elsewhere", OTHER_BYE, BYE + "/", BYE.upper()):
        r = browser.get("/logout", params={"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": uri})
        assert "not registered" in no_redirect_400(r)
    r = browser.get("/logout", params={"client_id": "rp2", "post_logout_redirect_uri": BYE})
    no_redirect_400(r)
    r = browser.get("/logout", params={"post_logout_redirect_uri": BYE})  # no client to hold it against
    no_redirect_400(r)
    r = browser.get("/logout", params={"id_token_hint": tokens["id_token"], "client_id": "rp2"})
    assert "not the one the ID token" in no_redirect_400(r)
    assert live(idp, browser)


@pytest.mark.parametrize(
    "query",
    [
        "client_id=rp1&client_id=rp1&post_logout_redirect_uri=" + BYE,
        "post_logout_redirect_uri=%FF%FE&client_id=rp1",
        "client_id=rp1&state=%00",
        "id_token_hint=" + "x" * 9000,
    ],
    ids=["duplicated", "non-utf8", "control-char", "oversized"],
)
def test_malformed_requests_get_the_page_never_a_500(idp, browser, apps, query):
    sign_in_to(browser, idp, apps[0])
    r = browser.get("/logout?" + query)
    no_redirect_400(r)
    assert live(idp, browser)
    r = browser.post(
        "/logout", content=query.encode("latin-1"), headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    no_redirect_400(r)


def test_non_utf8_post_body_is_refused(idp, browser, apps):
    r = browser.post(
        "/logout", content=b"client_id=\xff\xfe", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    no_redirect_400(r)


def test_ui_locales_chooses_the_language(idp, browser, apps):
    sign_in_to(browser, idp, apps[0])
    r = browser.get("/logout", params={"client_id": "rp1", "ui_locales": "fr zh-CN en"})
    assert r.status_code == 200 and "退出登录" in r.text and 'lang="zh-CN"' in r.text
    r = browser.get(
        "/logout?"
        + urlencode({"client_id": "rp1", "post_logout_redirect_uri": "https://x.example/", "ui_locales": "zh-CN"})
    )
    assert "未在此应用中登记" in no_redirect_400(r)
