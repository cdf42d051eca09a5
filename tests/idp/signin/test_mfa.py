"""Second factors through the pages (docs/mfa.md): TOTP enrolment and sign-in, replays, the time
window, the lock after 5 wrong codes, recovery codes, the policy (roles, --require-mfa apps,
acr_values step-up), and bad input on every form."""

from __future__ import annotations

import time

import pyotp
import pytest

from campusid.idp.signin.authn import ACR_MFA, ACR_PASSWORD
from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import PASSWORD, Clock, auth_params, callback_params, follow, form_fields, make_user
from tests.idp.mfa_helpers import MFA_FOR_ADMINS, enrol_totp, id_token_claims, local_sign_in, mfa_idp, sign_in


@pytest.fixture
def idp_settings():
    return MFA_FOR_ADMINS


def _enrolled(idp, browser, username: str = "alice"):
    """`username` signed in on /account and enrolled an authenticator app: (secret, codes)."""
    r = local_sign_in(browser, username, "/account")
    assert r.status_code == 200 and 'id="totp-setup"' in r.text
    r = browser.get("/account/security/totp")
    secret, codes, _ = enrol_totp(browser, r.text)
    return secret, codes


def test_enrol_then_sign_in_with_password_and_code_gives_amr_pwd_otp(idp, browser):
    secret, _ = _enrolled(idp, browser)
    browser.cookies.clear()
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    r = sign_in(browser, flow, "alice")  # stops at the second-factor page
    assert r.status_code == 200 and 'id="mfa-form"' in r.text and 'name="code"' in r.text
    action, fields = form_fields(r.text, "mfa-form")
    code = pyotp.TOTP(secret).at(time.time() + 30)  # the enrolment used this step's code
    r = follow(browser, browser.post(action, data={**fields, "code": code}))
    if 'id="consent-form"' in r.text:
        action, fields = form_fields(r.text, "consent-form")
        r = browser.post(action, data={**fields, "decision": "allow"})
    from tests.idp.helpers import callback_params

    claims = id_token_claims(idp, browser, flow, callback_params(r.headers["location"]))
    assert {"pwd", "otp", "mfa"} <= set(claims["amr"])
    assert claims["acr"] == ACR_MFA


def test_the_secret_is_sealed_at_rest_and_the_recovery_codes_are_digests(idp, browser):
    secret, codes = _enrolled(idp, browser)
    user = idp.db.users.by_username("alice")
    (factor,) = idp.db.factors.list(user.id)
    assert secret.encode() not in factor.secret_enc
    from sqlalchemy import text

    from campusid.idp.store.db import make_engine

    engine = make_engine(idp.settings.database_url)
    try:
        with engine.connect() as conn:
            stored = [r[0] for r in conn.execute(text("SELECT code_hash FROM recovery_codes"))]
    finally:
        engine.dispose()
    assert len(stored) == 10
    assert not {c.replace("-", "") for c in codes} & set(stored)


def test_a_code_accepted_once_is_refused_the_second_time(idp, browser):
    secret, _ = _enrolled(idp, browser)
    # the time the second factors read: a step after the one the enrolment used
    clock = idp.ctx.factors.clock = Clock(time.time() + 120)
    code = pyotp.TOTP(secret).at(clock.now)
    browser.cookies.clear()
    assert "code" in sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice", lambda: code)
    browser.cookies.clear()
    r = sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice", lambda: code)
    assert r.status_code == 401 and 'id="mfa-form"' in r.text
    assert "already used" in r.text


@pytest.mark.parametrize(("offset", "accepted"), [(-2, False), (-1, True), (1, True), (2, False)])
def test_codes_one_step_away_are_accepted_and_two_steps_away_refused(idp, browser, offset, accepted):
    secret, _ = _enrolled(idp, browser)
    clock = idp.ctx.factors.clock = Clock((int(time.time()) // 30 + 10) * 30 + 15)  # well after the enrolment's step
    code = pyotp.TOTP(secret).at(clock.now + offset * 30)
    browser.cookies.clear()
    result = sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice", lambda: code)
    if accepted:
        assert "code" in result
    else:
        assert result.status_code == 401 and 'id="mfa-form"' in result.text


def test_five_wrong_codes_are_failures_then_429_with_retry_after_even_for_the_right_code(idp, browser):
    secret, _ = _enrolled(idp, browser)
    browser.cookies.clear()
    r = sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    action, fields = form_fields(r.text, "mfa-form")
    right = pyotp.TOTP(secret).at(time.time() + 30)
    wrong = f"{(int(right) + 1) % 1_000_000:06d}"
    for _ in range(5):
        r = browser.post(action, data={**fields, "code": wrong})
        assert r.status_code == 401
    r = browser.post(action, data={**fields, "code": right})
    assert r.status_code == 429
    assert 1 <= int(r.headers["Retry-After"]) <= 15 * 60
    assert "try again" in r.text
    assert len(idp.db.events.list(type="mfa_failure")) == 5  # audited; the locked attempt checked nothing


def test_a_recovery_code_signs_in_once(idp, browser):
    _, codes = _enrolled(idp, browser)
    for attempt in (1, 2):
        browser.cookies.clear()
        result = sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice", lambda: codes[0].lower())
        if attempt == 1:
            assert "code" in result
        else:
            assert result.status_code == 401
    assert idp.db.factors.recovery_codes_left(idp.db.users.by_username("alice").id) == 9


@pytest.mark.parametrize("code", ["12a456", "1234567", "", " ", "x" * 10_000, "１２３４５６", "\u0000" * 6])
def test_malformed_codes_get_a_message_never_a_500(idp, browser, code):
    _enrolled(idp, browser)
    browser.cookies.clear()
    r = sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice", lambda: code)
    assert r.status_code == 400
    assert 'id="mfa-form"' in r.text and 'role="alert"' in r.text  # the form again, saying why


def test_mfa_form_without_csrf_or_with_a_non_utf8_body_is_refused(idp, browser):
    _enrolled(idp, browser)
    browser.cookies.clear()
    r = sign_in(browser, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    action, fields = form_fields(r.text, "mfa-form")
    assert browser.post(action, data={"code": "123456"}).status_code == 403
    r = browser.post(
        action, content=b"code=%ff%fe&csrf_token=x", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert r.status_code == 400
    r = browser.post(action, content=b"{}", headers={"content-type": "application/json"})
    assert r.status_code == 400


def test_enrolment_refuses_a_wrong_or_malformed_first_code_and_keeps_the_secret(idp, browser):
    local_sign_in(browser, "alice", "/account")
    page = browser.get("/account/security/totp").text
    action, fields = form_fields(page, "totp-enrol-form")
    from tests.idp.mfa_helpers import secret_of

    secret = secret_of(page)
    for bad in ("000000" if pyotp.TOTP(secret).now() != "000000" else "111111", "abc", "9" * 7, ""):
        r = browser.post(action, data={**fields, "code": bad})
        assert r.status_code == 400
        assert secret_of(r.text) == secret  # the same enrolment, shown again
    r = browser.post(action, data={**fields, "code": "y" * 10_000})
    assert r.status_code == 400 and "too long" in r.text
    assert browser.post(action, data={"code": pyotp.TOTP(secret).now()}).status_code == 403
    assert idp.db.factors.list(idp.db.users.by_username("alice").id) == []


def test_signed_out_enrolment_leads_to_the_login_and_back(idp, browser):
    r = browser.get("/account/security/totp")
    assert r.status_code == 303 and r.headers["location"].startswith("/login?next=/account/security/totp")


def test_admin_without_a_factor_is_led_to_enrol_before_the_console(idp, browser):
    r = local_sign_in(browser, "admin", "/admin")
    assert 'id="totp-enrol-form"' in r.text  # not the console
    assert browser.get("/admin").headers["location"].startswith("/login?next=/admin")  # no session yet
    secret, _, r = enrol_totp(browser, r.text)
    action, fields = _continue(r.text)
    r = follow(browser, browser.post(action, data=fields))
    assert r.status_code == 200 and "/admin" in str(r.url)  # the console, after the factor
    # A new sign-in asks for the code; without it, no console.
    browser.cookies.clear()
    r = local_sign_in(browser, "admin", "/admin")
    assert 'id="mfa-form"' in r.text
    assert browser.get("/admin").status_code == 303
    action, fields = form_fields(r.text, "mfa-form")
    code = pyotp.TOTP(secret).at(time.time() + 30)
    r = follow(browser, browser.post(action, data={**fields, "code": code}))
    assert r.status_code == 200 and "/admin" in str(r.url)


def test_enrolment_completes_whatever_other_page_the_browser_opened_meanwhile(idp, browser):
    """Signing in for an app, led to set up an authenticator (the admin policy), the person opens
    /admin in the same browser before typing the code (which begins a sign-in of its own), then
    confirms a correct code on the enrolment page that was shown: the enrolment completes, its ten
    recovery codes are shown, and the app's sign-in goes on to the app."""
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    r = follow(browser, browser.get("/oauth/authorize", params=flow.params))
    action, fields = form_fields(r.text, "login-form")
    enrolment = follow(browser, browser.post(action, data={**fields, "username": "admin", "password": PASSWORD}))
    assert 'id="totp-enrol-form"' in enrolment.text
    # another tab: the admin console, which has no session yet and so begins its own sign-in
    console = follow(browser, browser.get("/admin"))
    assert 'id="login-form"' in console.text
    console_action, console_fields = form_fields(console.text, "login-form")
    # back in the first tab: the code shown there
    secret, codes, done = enrol_totp(browser, enrolment.text)
    assert len(set(codes)) == 10 and 'id="continue-form"' in done.text
    action, fields = _continue(done.text)
    r = follow(browser, browser.post(action, data=fields))
    action, fields = form_fields(r.text, "consent-form")  # on to the app: its consent, then its code
    r = browser.post(action, data={**fields, "decision": "allow"})
    assert r.status_code == 303 and "code" in callback_params(r.headers["location"])
    # and the console's own sign-in is still there to finish, now with the new factor
    r = follow(
        browser, browser.post(console_action, data={**console_fields, "username": "admin", "password": PASSWORD})
    )
    action, fields = form_fields(r.text, "mfa-form")
    r = follow(browser, browser.post(action, data={**fields, "code": pyotp.TOTP(secret).at(time.time() + 30)}))
    assert r.status_code == 200 and "/admin" in str(r.url)


def test_an_admin_session_from_before_the_policy_is_sent_to_enrol_then_to_sign_in_again(idp, browser):
    from campusid.idp.signin.authn import password_sign_in
    from campusid.idp.web.browser import new_session
    from tests.idp.helpers import run

    admin = idp.db.users.by_username("admin")
    raw, row = new_session(idp.ctx, password_sign_in(admin.id, int(time.time())))
    run(idp.store, idp.store.sessions.start(row))
    browser.cookies.set("campusid_session", raw)
    for page in ("/admin", "/admin/apps", "/account", "/developer"):
        assert browser.get(page).headers["location"].startswith("/account/security/totp?next=")
    r = browser.get("/account/security/totp?next=/admin")
    _, _, r = enrol_totp(browser, r.text)
    # a factor now, but this session did not use it: sign in again, with it
    assert browser.get("/admin").headers["location"].startswith("/login?next=/admin")


def _continue(page: str):
    action, fields = form_fields(page, "continue-form")
    return action, fields


def test_a_require_mfa_app_never_gets_a_code_from_a_password_only_sign_in(idp, browser):
    from tests.idp.helpers import active_client, run

    cid, secret = active_client(idp.store, client_type="web", redirect_uris=[WEB_REDIRECT], client_id="mfa-app")
    # approve again with --require-mfa: a new app, through the review workflow
    data, _ = run(
        idp.store,
        idp.ctx.apps.create(
            name="Grades admin", app_type="web", redirect_uris=[WEB_REDIRECT], scopes=["openid"], owner="dev"
        ),
    )
    strict = data["client_id"]
    run(idp.store, idp.ctx.apps.submit(strict))
    shown = run(idp.store, idp.ctx.apps.approve(strict, by="admin", require_mfa=True))
    assert shown["require_mfa"] is True
    run(idp.store, idp.ctx.apps.activate(strict))
    # alice has no factor: a password sign-in to the other app gets a code, to this one none
    assert "code" in sign_in(browser, auth_params(cid, WEB_REDIRECT, scope="openid"), "alice")
    r = sign_in(browser, auth_params(strict, WEB_REDIRECT, scope="openid"), "alice")
    assert not isinstance(r, dict) and 'id="totp-enrol-form"' in r.text  # set one up first
    # with the live password-only session, no code either (no silent SSO to it)
    r = browser.get("/oauth/authorize", params=auth_params(strict, WEB_REDIRECT, scope="openid", prompt="none").params)
    assert "error=login_required" in r.headers["location"]


def test_acr_values_mfa_steps_a_password_only_session_up(idp, browser):
    secret, _ = _enrolled(idp, browser)
    # the session from the /account sign-in used the password alone
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    callback = sign_in(browser, flow, "alice")
    assert "code" in callback and id_token_claims(idp, browser, flow, callback)["acr"] == ACR_PASSWORD
    flow = auth_params(idp.web_id, WEB_REDIRECT, acr_values=ACR_MFA)
    r = sign_in(browser, flow, "alice")
    assert 'id="mfa-form"' in r.text  # the password again, then the code
    action, fields = form_fields(r.text, "mfa-form")
    r = browser.post(action, data={**fields, "code": pyotp.TOTP(secret).at(time.time() + 30)})
    from tests.idp.helpers import callback_params

    claims = id_token_claims(idp, browser, flow, callback_params(r.headers["location"]))
    assert claims["acr"] == ACR_MFA and "otp" in claims["amr"]
    # the session now meets it: no new sign-in
    flow = auth_params(idp.web_id, WEB_REDIRECT, acr_values=ACR_MFA, prompt="none")
    assert "code=" in browser.get("/oauth/authorize", params=flow.params).headers["location"]


def test_roles_policy_is_configurable_and_empty_means_none(idp_env):
    from campusid.idp.settings import load_settings

    assert load_settings({**idp_env, "CAMPUSID_MFA_REQUIRED_ROLES": ""}).mfa_required_roles == ()
    assert load_settings({**idp_env, "CAMPUSID_MFA_REQUIRED_ROLES": "admin, developer"}).mfa_required_roles == (
        "admin",
        "developer",
    )
    env = {k: v for k, v in idp_env.items() if k != "CAMPUSID_MFA_REQUIRED_ROLES"}
    assert load_settings(env).mfa_required_roles == ("admin",)


def test_a_developer_is_asked_to_enrol_when_the_policy_names_developers(idp_env):
    idp = mfa_idp(idp_env, roles="developer")
    try:
        make_user(idp.store, "dev3", role="developer")
        with idp.client() as c:
            r = local_sign_in(c, "dev3", "/developer")
            assert 'id="totp-enrol-form"' in r.text
    finally:
        idp.store.close()


def test_a_require_mfa_device_app_is_not_approved_from_a_password_only_session(idp, browser):
    from tests.idp.device_helpers import enter_code, start
    from tests.idp.helpers import run

    apps = idp.ctx.apps

    async def strict_bot() -> None:
        await apps.create(
            name="Strict bot",
            app_type="native",
            redirect_uris=["http://127.0.0.1/cb"],
            scopes=["openid"],
            owner="dev",
            client_id="strict-bot",
            grant_types=["device_code"],
        )
        await apps.submit("strict-bot")
        await apps.approve("strict-bot", by="admin", grant_types=["device_code"], require_mfa=True)
        await apps.activate("strict-bot")

    run(idp.store, strict_bot())
    local_sign_in(browser, "alice", "/account")  # a password-only session
    user_code = start(browser, "strict-bot", scope="openid").json()["user_code"]
    r = enter_code(browser, idp.issuer, user_code)
    assert r.headers["location"].startswith("/login?interaction=")  # not the consent page
    r = follow(browser, r)
    action, fields = form_fields(r.text, "login-form")
    from tests.idp.helpers import PASSWORD

    r = follow(browser, browser.post(action, data={**fields, "username": "alice", "password": PASSWORD}))
    assert 'id="totp-enrol-form"' in r.text  # a factor first
    secret, _, r = enrol_totp(browser, r.text)
    action, fields = form_fields(r.text, "continue-form")
    r = follow(browser, browser.post(action, data=fields))
    assert 'id="consent-form"' in r.text and "Strict bot" in r.text


def test_the_wrong_code_limit_is_shared_through_redis(idp_env):
    """With CAMPUSID_REDIS_URL the counters live in Redis, so every worker sees the same lock: a
    second app on the same database and Redis (another worker) refuses the sixth attempt too."""
    env = {**idp_env, "CAMPUSID_REDIS_URL": "redis://127.0.0.1:6379/0"}
    first = mfa_idp(env)
    try:
        from campusid.idp.app import create_app

        second_app = create_app(first.settings)
        with first.client() as browser:
            secret, _ = _enrolled(first, browser)
            browser.cookies.clear()
            r = sign_in(browser, auth_params(first.web_id, WEB_REDIRECT), "alice")
            action, fields = form_fields(r.text, "mfa-form")
            right = pyotp.TOTP(secret).at(time.time() + 30)
            wrong = f"{(int(right) + 1) % 1_000_000:06d}"
            for _ in range(5):
                assert browser.post(action, data={**fields, "code": wrong}).status_code == 401
            cookies = dict(browser.cookies)
        from starlette.testclient import TestClient

        with TestClient(second_app, base_url=first.issuer, follow_redirects=False, cookies=cookies) as other:
            r = other.post(action, data={**fields, "code": right})
            assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        second_app.state.ctx.store.close()
    finally:
        first.store.close()
