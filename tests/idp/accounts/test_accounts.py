"""Who signed in and how travels into ID tokens (sid, amr, acr); disabling an account ends
everything it holds at once and keeps it out until it is enabled again."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from tests.conftest import run_cli
from tests.idp.conftest import NATIVE_REDIRECT, WEB_REDIRECT
from tests.idp.helpers import PASSWORD, auth_params, basic, code_exchange, form_fields, id_claims, login_through_pages

LOOPBACK = "http://127.0.0.1:40001/callback"


def native_tokens(idp, browser, scope="openid profile offline_access"):
    flow = auth_params(idp.native_id, LOOPBACK, scope=scope)
    code = login_through_pages(browser, idp.issuer, flow, "alice")["code"]
    return browser.post("/oauth/token", data=code_exchange(flow, code, LOOPBACK, idp.native_id))


def web_tokens(idp, browser):
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    code = login_through_pages(browser, idp.issuer, flow, "alice")["code"]
    form = code_exchange(flow, code, WEB_REDIRECT)
    return browser.post("/oauth/token", data=form, headers=basic(idp.web_id, idp.web_secret))


def test_id_tokens_name_the_session_and_how_the_user_signed_in(idp, browser):
    native = id_claims(idp, native_tokens(idp, browser))
    web = id_claims(idp, web_tokens(idp, browser))  # single sign-on: the same browser session
    assert native["amr"] == ["pwd"] and native["acr"] == "urn:campusid:acr:pwd"
    assert isinstance(native["sid"], str) and len(native["sid"]) >= 22
    assert web["sid"] == native["sid"] and web["auth_time"] == native["auth_time"]
    session_cookie = browser.cookies.get("campusid_session")
    assert session_cookie and session_cookie not in native["sid"]  # sid is not the cookie's value

    again = auth_params(idp.native_id, LOOPBACK, prompt="login")  # a new sign-in: a new session
    code = login_through_pages(browser, idp.issuer, again, "alice")["code"]
    fresh = id_claims(idp, browser.post("/oauth/token", data=code_exchange(again, code, LOOPBACK, idp.native_id)))
    assert fresh["sid"] != native["sid"]


def test_a_refreshed_id_token_keeps_sid_amr_and_acr(idp, browser):
    first = native_tokens(idp, browser)
    claims = id_claims(idp, first)
    form = {"grant_type": "refresh_token", "refresh_token": first.json()["refresh_token"], "client_id": idp.native_id}
    refreshed = id_claims(idp, browser.post("/oauth/token", data=form))
    assert (refreshed["sid"], refreshed["amr"], refreshed["acr"]) == (claims["sid"], claims["amr"], claims["acr"])


def test_discovery_lists_the_claims_and_acr_values(browser):
    doc = browser.get("/.well-known/openid-configuration").json()
    assert {"sid", "amr", "acr"} <= set(doc["claims_supported"])
    assert doc["acr_values_supported"] == ["urn:campusid:acr:pwd", "urn:campusid:acr:mfa"]


def test_disabling_an_account_ends_its_sessions_and_tokens_at_once_and_keeps_it_out(idp, idp_env, browser):
    tokens = native_tokens(idp, browser).json()
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert browser.get("/oauth/userinfo", headers=bearer).status_code == 200

    out = json.loads(run_cli(idp_env, "users", "disable", "alice", "--by", "admin", "--json").stdout)
    assert out == {"username": "alice", "disabled": True, "changed": True, "sessions_ended": 1, "grants_revoked": 1}

    assert browser.get("/oauth/userinfo", headers=bearer).status_code == 401
    form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": idp.native_id}
    refused = browser.post("/oauth/token", data=form)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    # the browser's session is gone: the next authorization asks for a login, and the right
    # password gets a clear refusal (a wrong one the ordinary failure, revealing nothing)
    flow = auth_params(idp.native_id, NATIVE_REDIRECT)
    page = browser.get(f"/oauth/authorize?{urlencode(flow.params)}")
    assert 'id="login-form"' in page.text
    action, fields = form_fields(page.text, "login-form")
    wrong = browser.post(action, data={**fields, "username": "alice", "password": "not it"})
    assert wrong.status_code == 401 and "disabled" not in wrong.text
    right = browser.post(action, data={**fields, "username": "alice", "password": PASSWORD})
    assert right.status_code == 403 and "This account is disabled" in right.text
    assert "campusid_session" not in right.headers.get("set-cookie", "")

    again = json.loads(run_cli(idp_env, "users", "disable", "alice", "--by", "admin", "--json").stdout)
    assert again == {"username": "alice", "disabled": True, "changed": False}
    events = idp.db.events.list(type="user_disabled")
    assert len(events) == 1 and events[0].username == "alice" and "by admin" in events[0].detail

    enabled = json.loads(run_cli(idp_env, "users", "enable", "alice", "--by", "admin", "--json").stdout)
    assert enabled == {"username": "alice", "disabled": False, "changed": True}
    assert native_tokens(idp, browser).status_code == 200
    listed = json.loads(run_cli(idp_env, "users", "list", "--json").stdout)["users"]
    assert {u["username"]: u["disabled"] for u in listed}["alice"] is False


def test_only_an_active_admin_other_than_the_user_may_disable_and_nothing_changes_otherwise(idp, idp_env):
    for args, message in [
        (("alice", "--by", "dev"), "--by must name an active admin"),
        (("alice", "--by", "nobody"), "--by must name an active admin"),
        (("nobody", "--by", "admin"), "no user named 'nobody'"),
        (("admin", "--by", "admin"), "cannot disable or enable their own account"),
    ]:
        proc = run_cli(idp_env, "users", "disable", *args, "--json", check=False)
        assert proc.returncode == 1 and message in json.loads(proc.stderr)["error"], proc.stderr
        assert "Traceback" not in proc.stderr
    assert not idp.db.users.by_username("alice").disabled
    assert idp.db.events.list(type="user_disabled") == []


def test_signing_out_ends_the_grants_of_that_session_only(idp, browser):
    """A session's end revokes what was issued in it: its refresh tokens fail at once, its access
    tokens are refused by userinfo; a grant of another browser's session goes on."""
    ours = native_tokens(idp, browser).json()
    with idp.client() as other_browser:
        theirs = native_tokens(idp, other_browser).json()
    action, fields = form_fields(browser.get("/logout").text, "logout-form")
    assert browser.post(action, data=fields).status_code == 200
    refresh = {"grant_type": "refresh_token", "client_id": idp.native_id}
    mine = browser.post("/oauth/token", data={**refresh, "refresh_token": ours["refresh_token"]})
    assert mine.status_code == 400 and mine.json()["error"] == "invalid_grant"
    userinfo = browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {ours['access_token']}"})
    assert userinfo.status_code == 401
    other = browser.post("/oauth/token", data={**refresh, "refresh_token": theirs["refresh_token"]})
    assert other.status_code == 200, other.text
