"""/cas/login (docs/cas.md): renew, gateway, services refused with a 400 page and never a redirect,
the signed-in page without a service, one SSO session with OIDC both ways, MFA by policy and by
the app's review, the login limit (429 with Retry-After), login_success with the CAS client_id."""

from __future__ import annotations

import time
from urllib.parse import quote

import pyotp
import pytest

from tests.idp.cas.helpers import (
    SERVICE,
    cas_app,
    login_url,
    service_ticket,
    sign_in,
    success,
    ticket_of,
    validate,
)
from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import answer_pages, auth_params, form_fields, login_through_pages
from tests.idp.mfa_helpers import enrol_totp, local_sign_in


def test_renew_asks_for_the_password_despite_the_session_and_marks_the_ticket(idp, browser, portal):
    service_ticket(browser)
    r = browser.get(login_url(renew="true"))
    assert r.status_code == 200 and 'id="login-form"' in r.text
    r = sign_in(browser, renew="true")
    ticket = ticket_of(r.headers["location"])
    user, attrs = success(validate(browser, ticket, renew="true").text)
    assert user == "alice" and attrs["isFromNewLogin"] == ["true"]


def test_renew_wins_over_gateway(idp, browser, portal):
    service_ticket(browser)
    r = browser.get(login_url(renew="true", gateway="true"))
    assert r.status_code == 200 and 'id="login-form"' in r.text


def test_gateway_with_a_session_gives_the_ticket(idp, browser, portal):
    service_ticket(browser)
    r = browser.get(login_url(gateway="true"))
    assert r.status_code == 302 and ticket_of(r.headers["location"]).startswith("ST-")


def test_gateway_without_a_session_goes_back_unchanged(idp, browser, portal):
    service = SERVICE + "?lang=zh&x=%2F"
    r = browser.get(login_url(service, gateway="true"))
    assert r.status_code == 302 and r.headers["location"] == service


def test_the_ticket_is_added_to_the_service_as_given(idp, browser, portal):
    service = "https://PORTAL.example.edu:443/portal/page?a=1&b=%2F"
    r = sign_in(browser, service)
    assert r.headers["location"].startswith(service + "&ticket=ST-")
    ticket = ticket_of(r.headers["location"])
    assert success(validate(browser, ticket, service).text)[0] == "alice"


REFUSED = [
    "https://portal.example.edu/portalx",  # not at a segment boundary
    "https://other.example.edu/portal",
    "https://evil@portal.example.edu/portal",
    "https://portal.example.edu/portal#x",
    "https://portal.example.edu/portal/../admin",
    "https://portal.example.edu/portal/%2e%2e/admin",
    "https://portal.example.edu/portal/" + "a" * 2048,
    "javascript:alert(1)//portal.example.edu/portal",
    "http://portal.example.edu/portal",
    "",
]


@pytest.mark.parametrize("signed_in", [False, True])
def test_a_refused_service_gets_the_400_page_never_a_redirect(idp, browser, portal, signed_in):
    if signed_in:
        service_ticket(browser)
    for service in REFUSED:
        for extra in ({}, {"gateway": "true"}, {"renew": "true"}):
            r = browser.get(login_url(service, **extra))
            assert r.status_code == 400 and "location" not in r.headers, (service, extra)
            assert r.headers["content-type"].startswith("text/html")
            assert "X-Frame-Options" in r.headers


def test_a_service_given_twice_is_refused(idp, browser, portal):
    r = browser.get(f"/cas/login?service={quote(SERVICE)}&service={quote(SERVICE)}")
    assert r.status_code == 400 and "location" not in r.headers


def test_a_suspended_app_is_not_served(idp, browser, portal):
    idp.apps.suspend("portal", by="admin")
    r = browser.get(login_url())
    assert r.status_code == 400 and "location" not in r.headers


def test_without_a_service_the_signed_in_page(idp, browser, portal):
    r = browser.get("/cas/login")
    assert r.status_code == 200 and 'id="login-form"' in r.text
    action, fields = form_fields(r.text, "login-form")
    r = browser.post(action, data={**fields, "username": "alice", "password": "correct horse battery staple"})
    assert r.status_code == 303
    r = browser.get("/cas/login")
    assert r.status_code == 200 and "Signed in as" in r.text and "Alice Zhang" in r.text


def test_sso_from_oidc_to_cas(idp, browser, portal):
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT), "alice")
    r = browser.get(login_url())
    assert r.status_code == 302 and ticket_of(r.headers["location"])


def test_sso_from_cas_to_oidc(idp, browser, portal):
    service_ticket(browser)
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    r = browser.get("/oauth/authorize", params=flow.params)
    answered = answer_pages(browser, r, "nobody", "wrong")  # only consent may be asked: no login form
    assert isinstance(answered, dict) and "code" in answered


def test_login_success_and_failure_carry_the_cas_client_id(idp, browser, portal):
    r = browser.get(login_url())
    action, fields = form_fields(r.text, "login-form")
    browser.post(action, data={**fields, "username": "alice", "password": "wrong password!"})
    sign_in(browser)
    events = idp.db.events.list(limit=10)
    kinds = {(e.type, e.client_id) for e in events}
    assert ("login_failure", "portal") in kinds and ("login_success", "portal") in kinds


def test_the_login_limit_counts_each_service_ticket(idp_env):
    from tests.idp.conftest import ISSUER, IdP

    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "2/hour"})
    try:
        cas_app(idp)
        with idp.client() as browser:
            service_ticket(browser)  # 1 (through the login form)
            assert browser.get(login_url()).status_code == 302  # 2
            r = browser.get(login_url())  # 3: over
            assert r.status_code == 429 and int(r.headers["retry-after"]) > 0
            assert "location" not in r.headers and "ticket" not in r.text
            # another app of the same user has its own count
            cas_app(idp, "library", ("https://library.example.edu/",))
            assert browser.get(login_url("https://library.example.edu/opac")).status_code == 302
    finally:
        idp.store.close()


def test_an_app_approved_with_require_mfa_needs_a_second_factor(idp, browser):
    cas_app(idp, "strict", ("https://strict.example.edu/",), require_mfa=True)
    cas_app(idp)
    service_ticket(browser)  # a password-only session, good for the ordinary app
    r = browser.get(login_url("https://strict.example.edu/x"))
    assert r.status_code == 200 and 'id="login-form"' in r.text  # not enough for the strict one
    action, fields = form_fields(r.text, "login-form")
    r = browser.post(action, data={**fields, "username": "alice", "password": "correct horse battery staple"})
    r = browser.get(r.headers["location"])
    assert 'id="totp-enrol-form"' in r.text  # alice has no factor: set one up first
    _, _, done = enrol_totp(browser, r.text)
    action, fields = form_fields(done.text, "continue-form")  # the recovery codes shown, then on
    r = browser.post(action, data=fields)
    assert r.status_code == 303 and "ticket=ST-" in r.headers["location"]


def test_a_user_with_a_factor_gives_it_for_a_cas_sign_in(idp, browser, portal):
    local_sign_in(browser, "alice", "/account")
    r = browser.get("/account/security/totp")
    secret, _, _ = enrol_totp(browser, r.text)
    browser.cookies.clear()
    r = sign_in(browser)
    r = browser.get(r.headers["location"])
    assert 'id="mfa-form"' in r.text
    action, fields = form_fields(r.text, "mfa-form")
    r = browser.post(action, data={**fields, "code": pyotp.TOTP(secret).at(time.time() + 30)})
    assert r.status_code == 303 and "ticket=ST-" in r.headers["location"]
