"""Database round trips of each step of a sign-in (no avoidable round trips).

Counted where every statement goes (the store's database interface), so the figures hold on
SQLite and on PostgreSQL alike; a change that adds a statement to a step fails here and must
say why. A transaction is recorded as the tuple of its statements (one commit).
"""

from __future__ import annotations

import contextlib
import time
from urllib.parse import urlencode

import pytest

from campusid.idp.crypto import token_hash
from campusid.idp.store.postgres import PostgresStore
from campusid.idp.store.rows import ClientEvent
from tests.idp.conftest import NATIVE_REDIRECT, WEB_REDIRECT
from tests.idp.helpers import (
    PASSWORD,
    auth_params,
    callback_params,
    code_exchange,
    form_fields,
    login_through_pages,
    pending_handle,
)


class Recorded(list):
    """Names of the statements run, in order; `params` holds each one's parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.params: list[dict] = []

    def clear(self) -> None:
        super().clear()
        self.params.clear()


class _RecordingTx:
    def __init__(self, tx, names: list) -> None:
        self._tx, self._names = tx, names

    def __getattr__(self, method: str):
        real = getattr(self._tx, method)

        async def recorded(q, *args):
            self._names.append(q.name)
            return await real(q, *args)

        return recorded


@pytest.fixture
def statements(idp, monkeypatch):
    """The statements run since the last clear()."""
    seen = Recorded()
    db = idp.store.db
    transaction = db.transaction

    def recording(method: str):
        real = getattr(db, method)

        async def recorded(q, values={}):  # noqa: B006 - never mutated
            seen.append(q.name)
            seen.params.append(values)
            return await real(q, values)

        return recorded

    @contextlib.asynccontextmanager
    async def recorded_transaction():
        names: list[str] = []
        async with transaction() as tx:
            yield _RecordingTx(tx, names)
        seen.append(tuple(names))
        seen.params.append({})

    for method in ("fetch_one", "fetch_all", "execute"):
        monkeypatch.setattr(db, method, recording(method))
    monkeypatch.setattr(db, "transaction", recorded_transaction)
    return seen


def test_each_step_of_a_sign_in_costs_the_statements_it_needs_and_no_more(idp, browser, statements):
    idp.db.grants.remember_consent(idp.student.id, idp.web_id, ["openid", "profile"], int(time.time()))
    flow = auth_params(idp.web_id, WEB_REDIRECT)

    # the login form comes with the authorization response: no redirect to /login to follow
    statements.clear()
    r = browser.get(f"/oauth/authorize?{urlencode(flow.params)}")
    assert r.status_code == 200 and "to continue to <strong>web app</strong>" in r.text
    assert statements == ["AUTHORIZE_CONTEXT", "INSERT_INTERACTION"]
    action, fields = form_fields(r.text, "login-form")

    statements.clear()
    r = browser.get(f"/login?interaction={pending_handle(fields['csrf_token'])}")  # the login page on its own
    assert r.status_code == 200
    # the application's name comes with the interaction, not from another lookup
    assert "to continue to <strong>web app</strong>" in r.text
    assert statements == ["INTERACTION"]

    statements.clear()
    r = browser.post(action, data={**fields, "username": "alice", "password": PASSWORD})
    assert r.status_code == 303
    code = callback_params(r.headers["location"])["code"]
    # The interaction, the user, the client and the consent in one statement; then, after the
    # password, one write finishes the interaction and stores the code's grant and the session
    # (a CTE on PostgreSQL; one transaction on SQLite, which has no INSERT inside a CTE). The
    # audit trail's login_success is one INSERT of its own: a sign-in is bound by the password
    # hash, not by one more statement.
    pg = isinstance(idp.store, PostgresStore)
    login_write = "COMPLETE_LOGIN_10" if pg else ("FINISH_INTERACTION", "INSERT_SESSION", "INSERT_GRANT")
    assert statements == ["LOGIN_CONTEXT", "INSERT_EVENT", login_write]

    statements.clear()
    r = browser.post("/oauth/token", data=code_exchange(flow, code, WEB_REDIRECT), auth=(idp.web_id, idp.web_secret))
    assert r.status_code == 200, r.text
    # Client authentication, then the one conditional UPDATE that consumes the code (two steps
    # since the client is authenticated before anything is consumed).
    assert statements == ["CLIENT", "CONSUME_CODE"]

    statements.clear()
    access = r.json()["access_token"]
    assert browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {access}"}).status_code == 200
    assert statements == ["TOKEN_SUBJECT"]  # the grant (still standing) and its user together

    statements.clear()
    r = browser.get(f"/oauth/authorize?{urlencode(auth_params(idp.web_id, WEB_REDIRECT).params)}")
    assert r.status_code == 303 and "code" in callback_params(r.headers["location"])
    assert statements == ["AUTHORIZE_CONTEXT", "INSERT_GRANT"]  # signed in: context, then the code


def test_a_records_request_is_one_statement(idp, browser, statements):
    redirect = NATIVE_REDIRECT.replace("127.0.0.1", "127.0.0.1:40123")
    flow = auth_params(idp.native_id, redirect, scope="openid grades.read")
    code = login_through_pages(browser, idp.issuer, flow, "alice")["code"]
    tokens = browser.post("/oauth/token", data=code_exchange(flow, code, redirect, idp.native_id)).json()
    statements.clear()
    r = browser.get("/records/v1/grades", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert r.status_code == 200 and r.json()["student"]["name"] == "Alice Zhang"
    assert statements == ["TRANSCRIPT"]  # the grant, the student and the grades together


def test_the_login_form_reads_no_user_when_the_interaction_is_gone(idp, browser, statements):
    statements.clear()
    r = browser.post("/login", data={"username": "alice", "password": PASSWORD})
    assert r.status_code == 400 and "expired" in r.text
    assert statements == []  # no pending sign-in named (nor this browser's binder): nothing to read


def test_an_overlong_username_is_not_looked_up(idp, browser, statements):
    r = browser.get(f"/oauth/authorize?{urlencode(auth_params(idp.web_id, WEB_REDIRECT).params)}")
    action, fields = form_fields(r.text, "login-form")
    statements.clear()
    r = browser.post(action, data={**fields, "username": "a" * 65, "password": PASSWORD})
    assert r.status_code == 400 and "Enter your username and password." in r.text
    assert statements == ["LOGIN_CONTEXT"] and statements.params[0]["name"] == ""


@pytest.mark.parametrize("how", ["wrong secret", "suspended"])
def test_a_client_that_does_not_authenticate_never_redeems_the_code(idp, browser, statements, how):
    """Client authentication comes before the code is consumed, so a refused request writes
    nothing: a genuine exchange racing it cannot find the code used (which would revoke the grant)."""
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    code = login_through_pages(browser, idp.issuer, flow, "alice")["code"]
    secret = idp.web_secret
    if how == "wrong secret":
        secret = "not-" + secret
    else:
        assert idp.db.apps.move(ClientEvent(None, idp.web_id, "t", "t", "active", "suspended", None, 0))
    statements.clear()
    r = browser.post("/oauth/token", data=code_exchange(flow, code, WEB_REDIRECT), auth=(idp.web_id, secret))
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    assert statements == ["CLIENT"]  # read to authenticate; nothing consumed
    assert idp.db.grants.by_code(token_hash(code)).code_used_at is None


def test_a_page_of_events_is_one_statement_named_after_its_filters(idp, statements):
    statements.clear()
    idp.db.events.list()
    idp.db.events.list(type="login_success", since=0)
    assert statements == ["EVENTS_PAGE_ALL", "EVENTS_PAGE_TYPE_SINCE"]
