"""Database round trips of each step of a sign-in (DESIGN 6: no avoidable round trips).

Counted where every hot statement goes (the hot path's backend), so the figures hold on SQLite
and on PostgreSQL alike; a change that adds a statement to a step fails here and must say why.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest

from campusid.idp.crypto import token_hash
from campusid.idp.store import hot
from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import PASSWORD, auth_params, callback_params, form_fields, login_through_pages

NAMES = {id(v): k for k, v in vars(hot).items() if isinstance(v, hot.Statement)}


class Recorded(list):
    """Names of the hot statements run, in order; `params` holds each one's parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.params: list[dict] = []

    def clear(self) -> None:
        super().clear()
        self.params.clear()


@pytest.fixture
def statements(idp, monkeypatch):
    """The hot statements run since the last clear()."""
    seen = Recorded()
    backend = idp.store.hot.backend
    one, run = backend.one, backend.run
    transaction = getattr(backend, "transaction", None)  # SQLite's several statements, one commit

    async def counted_one(stmt, params):
        seen.append(NAMES[id(stmt)])
        seen.params.append(params)
        return await one(stmt, params)

    async def counted_run(stmt, params):
        seen.append(NAMES[id(stmt)])
        seen.params.append(params)
        return await run(stmt, params)

    async def counted_transaction(first, then):
        seen.append(tuple(NAMES[id(stmt)] for stmt, _ in (first, *then)))
        seen.params.append(first[1])
        return await transaction(first, then)

    monkeypatch.setattr(backend, "one", counted_one)
    monkeypatch.setattr(backend, "run", counted_run)
    if transaction is not None:
        monkeypatch.setattr(backend, "transaction", counted_transaction)
    return seen


def test_each_step_of_a_sign_in_costs_the_statements_it_needs_and_no_more(idp, browser, statements):
    idp.store.consents.remember(idp.student["id"], idp.web_id, ["openid", "profile"], int(time.time()))
    flow = auth_params(idp.web_id, WEB_REDIRECT)

    # the login form comes with the authorization response: no redirect to /login to follow
    r = browser.get(f"/oauth/authorize?{urlencode(flow.params)}")
    assert r.status_code == 200 and "to continue to <strong>web app</strong>" in r.text
    assert statements == ["AUTHORIZE_CONTEXT", "INSERT_INTERACTION"]
    action, fields = form_fields(r.text, "login-form")

    statements.clear()
    r = browser.get("/login")  # the same page again (a reload)
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
    # (a CTE on PostgreSQL; one transaction on SQLite, which has no INSERT inside a CTE).
    pg = isinstance(idp.store.hot.backend, hot.PostgresBackend)
    login_write = "COMPLETE_LOGIN" if pg else ("FINISH_INTERACTION", "INSERT_SESSION", "INSERT_GRANT")
    assert statements == ["INTERACTION_FOR_LOGIN", login_write]

    statements.clear()
    r = browser.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": WEB_REDIRECT,
            "code_verifier": flow.verifier,
        },
        auth=(idp.web_id, idp.web_secret),
    )
    assert r.status_code == 200, r.text
    # The client is read and the code redeemed in one statement (a CTE on PostgreSQL; on SQLite,
    # which has no UPDATE inside a CTE, the redemption returns the client row).
    assert statements == (["CLIENT_AND_CODE"] if pg else ["REDEEM_CODE"])

    statements.clear()
    r = browser.get(f"/oauth/authorize?{urlencode(auth_params(idp.web_id, WEB_REDIRECT).params)}")
    assert r.status_code == 303 and "code" in callback_params(r.headers["location"])
    assert statements == ["AUTHORIZE_CONTEXT", "INSERT_GRANT"]  # signed in: context, then the code


def test_the_login_form_reads_no_user_when_the_interaction_is_gone(idp, browser, statements):
    r = browser.post("/login", data={"username": "alice", "password": PASSWORD})
    assert r.status_code == 400 and "expired" in r.text
    assert statements == []  # no interaction cookie: nothing to read


def test_an_overlong_username_is_not_looked_up(idp, browser, statements):
    browser.get(f"/oauth/authorize?{urlencode(auth_params(idp.web_id, WEB_REDIRECT).params)}")
    action, fields = form_fields(browser.get("/login").text, "login-form")
    statements.clear()
    r = browser.post(action, data={**fields, "username": "a" * 65, "password": PASSWORD})
    assert r.status_code == 400 and "Enter your username and password." in r.text
    assert statements == ["INTERACTION_FOR_LOGIN"] and statements.params[0]["name"] == ""


@pytest.mark.parametrize("how", ["wrong secret", "suspended"])
def test_a_client_that_does_not_authenticate_never_redeems_the_code(idp, browser, statements, how):
    """The redemption itself checks the client, so a refused request writes nothing: a genuine
    exchange racing it cannot find the code used (which would revoke the grant)."""
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    code = login_through_pages(browser, idp.issuer, flow, "alice")["code"]
    secret = idp.web_secret
    if how == "wrong secret":
        secret = "not-" + secret
    else:
        event = {"client_id": idp.web_id, "actor": "t", "action": "t", "feedback": None, "at": 0}
        assert idp.store.clients.transition(idp.web_id, ["active"], {"state": "suspended"}, event)
    statements.clear()
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": WEB_REDIRECT,
        "code_verifier": flow.verifier,
    }
    r = browser.post("/oauth/token", data=form, auth=(idp.web_id, secret))
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    pg = isinstance(idp.store.hot.backend, hot.PostgresBackend)
    # no RETURN_CODE: nothing was redeemed (SQLite then reads the client row for the answer)
    assert statements == (["CLIENT_AND_CODE"] if pg else ["REDEEM_CODE", "CLIENT"])
    assert idp.store.grants.by_code(token_hash(code))["code_used_at"] is None
