"""The hardened login surface (RFC 9700): CSRF on every form, security headers on every
HTML answer, no session fixation, logout ends the session server-side, one answer for an unknown
user and a wrong password (in body and in time), argon2id parameters with rehash on login."""

from __future__ import annotations

import re
import statistics
import time
from types import SimpleNamespace

import limits.storage.memory
import pytest
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from campusid.idp.app import create_app
from campusid.idp.crypto import token_hash
from campusid.idp.settings import load_settings
from tests.idp.conftest import ISSUER, NATIVE_REDIRECT, IdP
from tests.idp.helpers import (
    PASSWORD,
    SyncStore,
    auth_params,
    callback_params,
    form_fields,
    login_csrf,
    login_through_pages,
    pending_handle,
    run,
)

WRONG = "not the password"
SESSION = "campusid_session"
INTERACTION = "campusid_interaction"


def tampered(token: str) -> str:
    """The token with its last character changed (always to a different one)."""
    return token[:-1] + ("B" if token[-1] != "B" else "C")


def post_login(client: TestClient, username: str, password: str, csrf: str | None):
    data = {"username": username, "password": password}
    if csrf is not None:
        data["csrf_token"] = csrf
    return client.post("/login", data=data)


def live_session(idp: IdP, raw: str | None) -> bool:
    return raw is not None and idp.db.sessions.get(token_hash(raw), int(time.time())) is not None


# -- CSRF -------------------------------------------------------------------------------------
def test_a_login_post_without_or_with_a_wrong_csrf_token_is_refused_and_changes_nothing(idp_env):
    env = {
        **idp_env,
        "CAMPUSID_ISSUER": ISSUER,
        "CAMPUSID_LIMIT_FAILED_PER_ACCOUNT": "2/15 minutes",
        "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "2/15 minutes",
    }
    idp = IdP(env)
    try:
        b = idp.client()
        csrf = login_csrf(b)
        other = idp.client()
        foreign = login_csrf(other)  # a valid token, for another interaction
        # A form that names no pending sign-in of this browser (no token, a garbled one, another
        # browser's) is the expired page; this browser's own sign-in with a forged MAC is its login
        # form again, 403.
        for token, status in ((None, 400), ("", 400), ("x" * 43, 400), (foreign, 400), (tampered(csrf), 403)):
            for password in (WRONG, PASSWORD):
                r = post_login(b, "alice", password, token)
                assert r.status_code == status, (token, r.status_code)
                assert SESSION not in r.headers.get("set-cookie", "")
                assert ('id="login-form"' in r.text) == (status == 403)
        assert b.cookies.get(SESSION) is None
        # nothing was counted: ten refused wrong passwords would have locked the account (two
        # failures allowed) and used up the IP (two submissions allowed); one wrong and one right
        # password still get through
        assert post_login(b, "alice", WRONG, csrf).status_code == 401
        r = post_login(b, "alice", PASSWORD, csrf)
        assert r.status_code == 303 and live_session(idp, b.cookies.get(SESSION))
    finally:
        idp.store.close()


def test_consent_without_a_valid_csrf_token_issues_nothing_and_remembers_nothing(idp, browser):
    flow = auth_params(idp.web_id, "https://rp.example.edu/callback")
    r = browser.get("/oauth/authorize", params=flow.params)
    r = post_login(browser, "alice", PASSWORD, form_fields(r.text, "login-form")[1]["csrf_token"])
    assert r.headers["location"].startswith("/consent?interaction=")
    page = browser.get(r.headers["location"])
    _, fields = form_fields(page.text, "consent-form")
    for token in (None, "forged", tampered(fields["csrf_token"])):
        data = {"decision": "allow"} if token is None else {"decision": "allow", "csrf_token": token}
        r = browser.post("/consent", data=data)
        assert r.status_code == 403 and "location" not in r.headers
    assert idp.db.grants.consented_scopes(idp.student.id, idp.web_id) == set()
    r = browser.post("/consent", data={**fields, "decision": "allow"})
    assert "code" in callback_params(r.headers["location"])


def test_logout_needs_its_csrf_token_and_then_ends_the_session_server_side(idp, browser):
    login_through_pages(browser, idp.issuer, auth_params(idp.native_id, NATIVE_REDIRECT), "alice")
    raw = browser.cookies.get(SESSION)
    assert live_session(idp, raw)
    for data in ({}, {"csrf_token": "forged"}):
        r = browser.post("/logout", data=data)
        assert r.status_code == 403
        assert live_session(idp, raw)
    _, fields = form_fields(browser.get("/logout").text, "logout-form")
    r = browser.post("/logout", data=fields)
    assert r.status_code == 200
    assert not live_session(idp, raw)
    # the old cookie, replayed by someone who kept it, is nobody's session
    replay = idp.client(cookies={SESSION: raw})
    assert "Signed in as" not in replay.get("/").text
    r = replay.get("/oauth/authorize", params=auth_params(idp.native_id, NATIVE_REDIRECT, prompt="none").params)
    assert callback_params(r.headers["location"])["error"] == "login_required"


# -- no fixation ------------------------------------------------------------------------------
def test_the_session_cookie_before_login_differs_from_the_one_after(idp, browser):
    login_through_pages(browser, idp.issuer, auth_params(idp.native_id, NATIVE_REDIRECT), "alice")
    before = browser.cookies.get(SESSION)
    flow = auth_params(idp.native_id, NATIVE_REDIRECT, prompt="login")
    assert "code" in login_through_pages(browser, idp.issuer, flow, "alice")
    after = browser.cookies.get(SESSION)
    assert before and after and before != after
    assert live_session(idp, after) and not live_session(idp, before)


def test_a_planted_session_or_interaction_id_is_never_adopted(idp):
    planted = "A" * 43
    b = idp.client(cookies={SESSION: planted})
    r = b.get("/oauth/authorize", params=auth_params(idp.native_id, NATIVE_REDIRECT).params)
    binder = b.cookies.get(INTERACTION)
    _, fields = form_fields(r.text, "login-form")
    login_handle = pending_handle(fields["csrf_token"])
    r = b.post("/login", data={**fields, "username": "alice", "password": PASSWORD})
    assert r.status_code == 303
    issued = dict(c.split(";", 1)[0].split("=", 1) for c in r.headers.get_list("set-cookie"))
    assert issued[SESSION] != planted and live_session(idp, issued[SESSION]) and not live_session(idp, planted)
    # the signed-in sign-in goes on under a new handle: whoever knew the browser's binder and the
    # login's handle (a planted binder, a page seen over a shoulder) cannot reach its consent
    consent_handle = r.headers["location"].rpartition("interaction=")[2]
    assert consent_handle and consent_handle != login_handle
    attacker = idp.client(cookies={INTERACTION: binder})
    assert 'id="consent-form"' not in attacker.get(f"/consent?interaction={login_handle}").text
    # and the handle alone, without this browser's binder, is nothing
    stranger = idp.client()
    assert 'id="consent-form"' not in stranger.get(f"/consent?interaction={consent_handle}").text
    assert 'id="consent-form"' in b.get(f"/consent?interaction={consent_handle}").text


# -- security headers on every HTML answer ----------------------------------------------------
PAGE_HEADERS = {
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "cache-control": "no-store",
}


def _routes(app) -> list[tuple[str, str]]:
    out = []
    for route in app.routes:
        if isinstance(route, Mount):
            out += [(m, route.path + p) for m, p in _routes(route)]
        elif isinstance(route, Route):
            out += [(m, route.path) for m in sorted(route.methods or ()) if m in ("GET", "POST")]
    return out


def _assert_page_headers(r, where: str) -> None:
    for name, value in PAGE_HEADERS.items():
        assert r.headers.get(name) == value, (where, name, r.headers.get(name))
    csp = r.headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp, where
    assert not re.search(r"https?://", csp), where  # no third-party sources
    assert "access-control-allow-origin" not in r.headers, where  # no CORS on pages


def test_every_html_answer_carries_the_security_headers(idp):
    signed_in = idp.client()
    login_through_pages(signed_in, idp.issuer, auth_params(idp.native_id, NATIVE_REDIRECT), "alice")
    pending = idp.client()  # in the middle of a sign-in: login page shown, consent pending for another
    pending.get("/oauth/authorize", params=auth_params(idp.native_id, NATIVE_REDIRECT).params)
    seen = set()
    origin = {"Origin": "https://evil.example"}
    for method, path in _routes(idp.app):
        if "{" in path:
            path = re.sub(r"\{[^}]+\}", "x", path)
        if path.startswith("/static"):
            continue
        for who in (idp.client(), signed_in, pending):
            r = who.request(method, path, headers=origin)
            if r.headers.get("content-type", "").startswith("text/html"):
                _assert_page_headers(r, f"{method} {path}")
                seen.add(path)
    assert {"/", "/login", "/consent", "/logout", "/oauth/authorize"} <= seen, seen
    for path in ("/no-such-page", "/oauth/authorize?client_id=unknown"):
        r = idp.client().get(path)
        assert r.headers["content-type"].startswith("text/html")
        _assert_page_headers(r, path)


# -- one answer for an unknown user and a wrong password --------------------------------------
def _without_date(r) -> list[tuple[str, str]]:
    """The headers but the date and the request id (random per request, whoever signs in)."""
    assert len(r.headers["x-request-id"]) == 32
    return sorted((k, v) for k, v in r.headers.multi_items() if k.lower() not in ("date", "x-request-id"))


def test_unknown_user_and_wrong_password_get_the_same_answer_byte_for_byte(idp, browser, monkeypatch):
    # the limiter's time stands still, so both accounts' failures happen at the same instant
    frozen = SimpleNamespace(time=lambda now=time.time(): now)
    monkeypatch.setattr(limits.storage.memory, "time", frozen)
    idp.ctx.limiter.clock = frozen.time
    csrf = login_csrf(browser)
    known = post_login(browser, "alice", WRONG, csrf)
    unknown = post_login(browser, "bruno", WRONG, csrf)  # same length, same interaction and token
    assert known.status_code == unknown.status_code == 401
    assert _without_date(known) == _without_date(unknown)
    assert known.content.replace(b'value="alice"', b'value="bruno"') == unknown.content
    assert known.content.count(b"alice") == 1  # the echoed username is the only difference
    # and locked alike: five ordinary failures, then 429 from the 6th submission on
    for _ in range(4):
        known, unknown = post_login(browser, "alice", WRONG, csrf), post_login(browser, "bruno", WRONG, csrf)
    assert known.status_code == unknown.status_code == 401  # the 5th failure
    known, unknown = post_login(browser, "alice", PASSWORD, csrf), post_login(browser, "bruno", PASSWORD, csrf)
    assert known.status_code == unknown.status_code == 429
    assert _without_date(known) == _without_date(unknown)
    assert known.content.replace(b'value="alice"', b'value="bruno"') == unknown.content


@pytest.mark.serial
def test_unknown_user_and_wrong_password_take_the_same_time(idp_env):
    """Real argon2id parameters (19 MiB, t=2); 30 of each, interleaved; medians within 20%."""
    env = {
        **idp_env,
        "CAMPUSID_ISSUER": ISSUER,
        "CAMPUSID_ARGON2_MEMORY_COST": str(19 * 1024),
        "CAMPUSID_ARGON2_TIME_COST": "2",
        "CAMPUSID_LIMIT_FAILED_PER_ACCOUNT": "1000/15 minutes",
        "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "1000/15 minutes",
    }
    settings = load_settings(env)
    app = create_app(settings)
    ctx = app.state.ctx
    try:
        from campusid.idp.accounts import add_user

        db = SyncStore(ctx.store)
        run(ctx.store, add_user(ctx.store, ctx.passwords, username="alice", name="Alice", password=PASSWORD,
                                role="student", student_number=None, now=int(time.time())))  # fmt: skip
        assert "m=19456,t=2" in db.users.by_username("alice").password_hash
        b = TestClient(app, base_url=ISSUER, follow_redirects=False)
        csrf = login_csrf(b)
        times: dict[str, list[float]] = {"alice": [], "bruno": []}
        post_login(b, "alice", WRONG, csrf), post_login(b, "bruno", WRONG, csrf)  # warm up
        for i in range(30):
            for name in ("alice", "bruno") if i % 2 else ("bruno", "alice"):  # ABBA: drift cancels out
                start = time.perf_counter()
                r = post_login(b, name, WRONG, csrf)
                times[name].append(time.perf_counter() - start)
                assert r.status_code == 401
        known, unknown = statistics.median(times["alice"]), statistics.median(times["bruno"])
        assert abs(known - unknown) <= 0.2 * min(known, unknown), (known, unknown)
    finally:
        ctx.store.close()


# -- argon2id parameters, rehash on login -----------------------------------------------------
def test_changed_argon2_parameters_rehash_the_password_at_the_next_login(idp, idp_env):
    old_hash = idp.db.users.by_username("alice").password_hash
    assert "m=8192,t=1" in old_hash
    env = {
        **idp_env,
        "CAMPUSID_ISSUER": ISSUER,
        "CAMPUSID_ARGON2_MEMORY_COST": "9216",
        "CAMPUSID_ARGON2_TIME_COST": "2",
    }
    app = create_app(load_settings(env), store=idp.store)
    b = TestClient(app, base_url=ISSUER, follow_redirects=False)
    csrf = login_csrf(b)
    assert post_login(b, "alice", WRONG, csrf).status_code == 401
    assert idp.db.users.by_username("alice").password_hash == old_hash  # a failure changes nothing
    assert post_login(b, "alice", PASSWORD, csrf).status_code == 303
    new_hash = idp.db.users.by_username("alice").password_hash
    assert new_hash != old_hash and "$argon2id$" in new_hash and "m=9216,t=2" in new_hash
    b2 = TestClient(app, base_url=ISSUER, follow_redirects=False)
    assert post_login(b2, "alice", PASSWORD, login_csrf(b2)).status_code == 303  # the new hash verifies


SLASHED = [
    ("POST", "/login/"),
    ("POST", "/oauth/token/"),
    ("GET", "/oauth/authorize/"),
    ("POST", "/oauth/authorize/"),
    ("GET", "/consent/"),
    ("POST", "/consent/"),
    ("POST", "/oauth/revoke/"),
    ("GET", "/.well-known/openid-configuration/"),
    ("POST", "/api/v1/apps/"),
]


@pytest.mark.parametrize("issuer", ["http://127.0.0.1:8000", "https://login.example.edu/idp"])
def test_a_trailing_slash_is_not_found_never_a_redirect_to_the_host_header(idp_env, issuer):
    """Starlette's default would answer 307 to http://<Host>/login, and a browser re-sends a POST's
    password to a 307's target: neither a redirect after a POST nor a URL from Host, ever."""
    app = create_app(load_settings({**idp_env, "CAMPUSID_ISSUER": issuer}))
    prefix = app.state.ctx.settings.issuer.path
    form = {"username": "alice", "password": "a password", "grant_type": "authorization_code"}
    try:
        with TestClient(app, base_url="http://evil.example", follow_redirects=False) as c:
            for method, path in SLASHED:
                r = c.request(method, prefix + path, data=form if method == "POST" else None)
                assert r.status_code == 404, (method, path, r.status_code)
                assert "location" not in r.headers and "evil.example" not in r.text
    finally:
        app.state.ctx.store.close()
