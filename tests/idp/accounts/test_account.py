"""/account (docs/mfa.md): profile, my sessions, connected apps, security; CSRF on every form,
bad input answered with a message, signed out → the login and back; and `users mfa-reset`."""

from __future__ import annotations

import json
import re

import pytest

from campusid.idp.accounts import rules
from tests.conftest import run_cli
from tests.idp.conftest import NATIVE_REDIRECT, WEB_REDIRECT
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, follow, form_fields
from tests.idp.mfa_helpers import MFA_FOR_ADMINS, enrol_totp, local_sign_in, sign_in


@pytest.fixture
def idp_settings():
    return MFA_FOR_ADMINS


def _form_in(page: str, marker: str, form_class: str) -> tuple[str, dict]:
    """The form of class `form_class` inside the element carrying `marker` (an attribute)."""
    match = re.search(
        rf"<tr {re.escape(marker)}>.*?<form class=\"{form_class}\"[^>]*action=\"([^\"]+)\"(.*?)</form>", page, re.S
    )
    assert match, f"no {form_class} form in the element with {marker}"
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', match.group(2)))
    return match.group(1), fields


def test_signed_out_account_leads_to_the_login_and_back(idp, browser):
    r = browser.get("/account")
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/account"
    r = local_sign_in(browser, "alice", "/account")
    assert r.status_code == 200 and str(r.url).endswith("/account")
    assert "Alice Zhang" in r.text and "2024001" in r.text
    assert 'id="this-session"' in r.text


def test_the_page_is_in_simplified_chinese_for_a_chinese_browser(idp, browser):
    local_sign_in(browser, "alice", "/account")
    r = browser.get("/account", headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    assert 'lang="zh-CN"' in r.text and "个人中心" in r.text and "已授权的应用" in r.text


def _native_tokens(idp, browser) -> dict:
    flow = auth_params(idp.native_id, NATIVE_REDIRECT, scope="openid profile offline_access")
    callback = sign_in(browser, flow, "alice")
    r = browser.post("/oauth/token", data=code_exchange(flow, callback["code"], NATIVE_REDIRECT, idp.native_id))
    assert r.status_code == 200, r.text
    return r.json()


def test_removing_a_connected_app_revokes_its_tokens_at_once_and_asks_consent_again(idp, browser):
    tokens = _native_tokens(idp, browser)
    r = follow(browser, browser.get("/account"))
    assert f'data-client-id="{idp.native_id}"' in r.text
    assert f'data-client-id="{idp.web_id}"' not in r.text  # never used
    action, fields = _form_in(r.text, f'data-client-id="{idp.native_id}"', "revoke-app")
    assert browser.post(action, data={**fields, "csrf_token": "forged"}).status_code == 403
    r = browser.post(action, data=fields)
    assert r.status_code == 303 and r.headers["location"] == "/account?done=app"
    r = browser.post(
        "/oauth/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": idp.native_id},
    )
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    r = browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert r.status_code == 401
    assert f'data-client-id="{idp.native_id}"' not in browser.get("/account").text
    # the session goes on, but the app must ask again
    flow = auth_params(idp.native_id, NATIVE_REDIRECT, scope="openid profile offline_access")
    r = follow(browser, browser.get("/oauth/authorize", params=flow.params))
    assert 'id="consent-form"' in r.text
    assert [e.client_id for e in idp.db.events.list(type="consent_revoked")] == [idp.native_id]


def test_sign_out_everywhere_else_ends_the_other_browsers_session(idp, browser):
    with idp.client() as other:
        local_sign_in(other, "alice", "/account")
        assert other.get("/account").status_code == 200
        tokens = _native_tokens(idp, other)  # a grant issued in the other session
        r = follow(browser, local_sign_in(browser, "alice", "/account"))
        assert len(re.findall(r"<tr data-session=", r.text)) == 1
        action, fields = form_fields(r.text, "signout-others")
        assert browser.post(action, data={"csrf_token": "forged"}).status_code == 403
        r = browser.post(action, data=fields)
        assert r.status_code == 303
        assert other.get("/account").headers["location"].startswith("/login")
        refresh = other.post(
            "/oauth/token",
            data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": idp.native_id},
        )
        assert refresh.json()["error"] == "invalid_grant"
    assert browser.get("/account").status_code == 200  # this one goes on


def test_ending_one_other_session(idp, browser):
    with idp.client() as other:
        local_sign_in(other, "alice", "/account")
        r = local_sign_in(browser, "alice", "/account")
        sid = re.search(r'<tr data-session="([^"]+)"', r.text).group(1)
        action, fields = _form_in(r.text, f'data-session="{sid}"', "end-session")
        assert browser.post(action, data=fields).status_code == 303
        assert other.get("/account").status_code == 303
        assert browser.post(action, data={**fields, "session": "x" * 65}).status_code == 400
        # a sid that is not one of this user's sessions ends nothing (and is no error)
        assert browser.post(action, data={**fields, "session": "\u00ff" * 10}).status_code == 303
        assert browser.get("/account").status_code == 200


def test_account_forms_refuse_malformed_bodies_with_a_message(idp, browser):
    r = local_sign_in(browser, "alice", "/account")
    _, fields = form_fields(r.text, "signout-others")
    for path in ("/account/apps/revoke", "/account/sessions/end", "/account/security/factor/remove"):
        r = browser.post(
            path, content=b"csrf_token=%ff%fe", headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert r.status_code == 400 and 'role="alert"' in r.text
        r = browser.post(path, data={**fields, "x": "y" * 10_000})
        assert r.status_code == 400
        r = browser.post(path, data=fields)  # nothing named
        assert r.status_code == 400


def test_password_change(idp, browser):
    r = local_sign_in(browser, "alice", "/account")
    action, fields = form_fields(r.text, "password-form")
    r = browser.post(action, data={**fields, "current_password": "wrong", "new_password": "a new long password"})
    assert r.status_code == 401
    r = browser.post(action, data={**fields, "current_password": PASSWORD, "new_password": "short"})
    assert r.status_code == 400
    r = browser.post(action, data={**fields, "current_password": PASSWORD, "new_password": "a new long password"})
    assert r.status_code == 303
    browser.cookies.clear()
    r = sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    assert r.status_code == 401  # the old password no longer works
    browser.cookies.clear()
    assert "code" in sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice", password="a new long password")


def test_the_account_page_and_the_cli_refuse_the_same_short_password(idp, browser, idp_env):
    """One policy (accounts/rules.py): a password one character short of the minimum is refused
    by the password change and by `users add` alike, and one of exactly the minimum is taken by both."""
    short, enough = "p" * (rules.MIN_PASSWORD - 1), "p" * rules.MIN_PASSWORD
    r = local_sign_in(browser, "alice", "/account")
    assert f'minlength="{rules.MIN_PASSWORD}" maxlength="{rules.MAX_PASSWORD}"' in r.text  # the form says it too
    action, fields = form_fields(r.text, "password-form")
    refused = browser.post(action, data={**fields, "current_password": PASSWORD, "new_password": short})
    assert refused.status_code == 400 and "The new password must be 10 to 1024 characters." in refused.text
    cli = run_cli(
        idp_env, "users", "add", "carol", "--name", "Carol", "--password-stdin", stdin=short + "\n", check=False
    )
    assert cli.returncode == 2 and "the password must be 10 to 1024 characters" in cli.stderr
    assert idp.db.users.by_username("carol") is None

    changed = browser.post(action, data={**fields, "current_password": PASSWORD, "new_password": enough})
    assert changed.status_code == 303
    run_cli(idp_env, "users", "add", "carol", "--name", "Carol", "--password-stdin", stdin=enough + "\n")
    assert idp.db.users.by_username("carol") is not None


def test_security_section_removes_the_factor_and_makes_new_recovery_codes(idp, browser):
    local_sign_in(browser, "alice", "/account")
    _, codes, _ = enrol_totp(browser, browser.get("/account/security/totp").text)
    r = browser.get("/account")
    assert 'data-enabled="true"' in r.text and '<td id="recovery-left">10</td>' in r.text
    action, fields = form_fields(r.text, "recovery-codes-form")
    r = browser.post(action, data=fields)
    new_codes = re.findall(r'<code class="recovery-code">([^<]+)</code>', r.text)
    assert len(new_codes) == 10 and not set(new_codes) & set(codes)
    r = browser.get("/account")
    action, fields = _form_in(
        r.text.replace("<tr><th>Authenticator app</th>", "<tr factor>"), "factor", "remove-factor"
    )
    assert browser.post(action, data=fields).status_code == 303
    assert 'data-enabled="false"' in browser.get("/account").text
    assert [e.type for e in idp.db.events.list(type="mfa_removed")] == ["mfa_removed"]


def test_mfa_reset_cli_removes_the_factors_audited(idp, idp_env, browser):
    local_sign_in(browser, "alice", "/account")
    enrol_totp(browser, browser.get("/account/security/totp").text)
    env = {**idp_env, "CAMPUSID_MFA_REQUIRED_ROLES": "admin"}
    proc = run_cli(env, "users", "mfa-reset", "alice", "--by", "admin", "--json")
    assert json.loads(proc.stdout) == {"username": "alice", "factors_removed": 1, "kinds": ["totp"]}
    events = idp.db.events.list(type="mfa_removed")
    assert len(events) == 1 and "reset by admin" in events[0].detail and events[0].username == "alice"
    # a password alone signs in again
    browser.cookies.clear()
    assert "code" in sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    bad = run_cli(env, "users", "mfa-reset", "alice", "--by", "alice", "--json", check=False)
    assert bad.returncode == 1 and "admin" in bad.stdout + bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli(env, "users", "mfa-reset", "nobody", "--by", "admin", check=False)
    assert bad.returncode == 1 and "no user" in bad.stdout + bad.stderr
