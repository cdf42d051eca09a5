"""Server-side sessions and cookies (issue 2, item 6)."""

from campusid.idp.crypto import token_hash
from campusid.idp.store.rows import ClientEvent
from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import auth_params, login_through_pages, run


def test_session_cookie_flags_on_http_loopback(idp, browser):
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    raw = browser.cookies.get("campusid_session")
    assert raw and len(raw) >= 43
    assert idp.db.sessions.get(token_hash(raw), 0) is not None  # stored hashed, server-side
    assert idp.db.sessions.get(raw, 0) is None


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
    assert idp.db.sessions.get(token_hash(first), 0) is None  # the old session ended
    page = browser.get("/logout").text
    from tests.idp.helpers import form_fields

    action, fields = form_fields(page, "logout-form")
    assert browser.post(action, data=fields).status_code == 200
    assert idp.db.sessions.get(token_hash(second), 0) is None
    r = browser.get("/oauth/authorize", params=auth_params(idp.web_id, WEB_REDIRECT, prompt="none").params)
    assert "error=login_required" in r.headers["location"]


def test_logout_without_csrf_keeps_the_session(idp, browser):
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    raw = browser.cookies.get("campusid_session")
    r = browser.post("/logout", data={"csrf_token": "forged"})
    assert r.status_code == 403
    assert idp.db.sessions.get(token_hash(raw), 0) is not None


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
    claims = jwt.decode(r.json()["id_token"], run(idp.store, idp.ctx.keys.verification_keys())).claims
    session = idp.db.sessions.get(token_hash(browser.cookies.get("campusid_session")), 0)
    assert claims["auth_time"] == session.auth_time
    r = browser.get("/oauth/authorize", params=auth_params(idp.web_id, WEB_REDIRECT, max_age="3600").params)
    assert "code=" in r.headers["location"]


def _rows(idp, table: str, user_id: str) -> int:
    """Rows of `table` for the user, counted through an engine of the test's own (an inspection)."""
    from sqlalchemy import text

    from campusid.idp.store.db import make_engine

    engine = make_engine(idp.settings.database_url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(f"SELECT count(*) FROM {table} WHERE user_id = :u"), {"u": user_id}).scalar_one()  # noqa: S608 - test's own table names
    finally:
        engine.dispose()


def _login_form(idp, browser, flow):
    from urllib.parse import urlencode

    from tests.idp.helpers import form_fields

    r = browser.get(f"/oauth/authorize?{urlencode(flow.params)}")
    assert r.status_code == 200
    return form_fields(r.text, "login-form")


def test_a_login_form_sent_twice_signs_in_once(idp, browser):
    """The interaction ends in the same write that stores the code and the session: a second POST
    of the same form (a double click, a replay) writes neither."""
    from tests.idp.helpers import PASSWORD

    idp.db.grants.remember_consent(idp.student.id, idp.web_id, ["openid", "profile"], 0)
    action, fields = _login_form(idp, browser, auth_params(idp.web_id, WEB_REDIRECT))
    cookie = browser.cookies.get("campusid_interaction")
    form = {**fields, "username": "alice", "password": PASSWORD}
    first = browser.post(action, data=form)
    assert first.status_code == 303 and "code=" in first.headers["location"]
    grants, sessions = _rows(idp, "grants", idp.student.id), _rows(idp, "sessions", idp.student.id)
    assert (grants, sessions) == (1, 1)
    browser.cookies.set("campusid_interaction", cookie)  # the finished interaction's cookie, sent again
    second = browser.post(action, data=form)
    assert second.status_code in (400, 401) and "location" not in second.headers
    assert "campusid_session" not in second.headers.get("set-cookie", "")
    assert (_rows(idp, "grants", idp.student.id), _rows(idp, "sessions", idp.student.id)) == (1, 1)


def test_a_client_suspended_while_the_user_signs_in_gets_no_code(idp, browser):
    from tests.idp.helpers import PASSWORD

    action, fields = _login_form(idp, browser, auth_params(idp.web_id, WEB_REDIRECT))
    assert idp.db.apps.move(ClientEvent(None, idp.web_id, "t", "t", "active", "suspended", None, 0))
    r = browser.post(action, data={**fields, "username": "alice", "password": PASSWORD})
    assert r.status_code == 400 and "can no longer continue" in r.text
    assert _rows(idp, "grants", idp.student.id) == 0
    assert _rows(idp, "sessions", idp.student.id) == 1  # the password was right: signed in all the same


def test_of_two_racing_completions_of_one_login_only_the_first_writes(idp):
    """Both requests read the interaction before either finished it: the write itself decides."""
    import time

    from campusid.idp.crypto import new_token
    from campusid.idp.store.rows import Grant, Interaction, Session

    store, uid, now = idp.store, idp.student.id, int(time.time())
    interaction = Interaction(token_hash("i"), "authorize", {"client_id": idp.web_id}, None, None, now, now + 600)

    def attempt(n: int) -> tuple[Session, Grant]:
        session = Session(token_hash(f"s{n}"), uid, now, now, now + 600, f"sid-{n}", "pwd", "urn:campusid:acr:pwd")
        grant = Grant(new_token(8), token_hash(f"c{n}"), idp.web_id, uid, WEB_REDIRECT, "x" * 43, None, "openid",
                      now, now, now + 60, None, None)  # fmt: skip
        return session, grant

    async def race() -> list[bool]:
        await store.sessions.create_interaction(interaction)
        outcomes = []
        for n in (1, 2):
            session, grant = attempt(n)
            outcomes.append(await store.sessions.complete_login(interaction.id_hash, session, grant=grant))
        return outcomes

    assert run(store, race()) == [True, False]
    assert idp.db.grants.by_code(token_hash("c1")) is not None
    assert idp.db.grants.by_code(token_hash("c2")) is None
    assert idp.db.sessions.get(token_hash("s1"), 0) is not None
    assert idp.db.sessions.get(token_hash("s2"), 0) is None


def test_two_first_consents_of_one_user_to_one_client_both_count(idp):
    """Two tabs (or two workers) allow the same app at once: both read no consent and both insert;
    the database refuses one insert, which is then run again on the row the other wrote."""
    import asyncio

    store, uid = idp.store, idp.student.id

    async def race() -> None:
        await asyncio.gather(
            store.grants.remember_consent(uid, idp.web_id, ["openid", "profile"], 1),
            store.grants.remember_consent(uid, idp.web_id, ["openid", "email"], 2),
        )

    run(store, race())
    assert idp.db.grants.consented_scopes(uid, idp.web_id) == {"openid", "profile", "email"}
