"""Passkeys through the pages with a software authenticator (tests/idp/signin/soft_authenticator.py):
enrol on /account, sign in with the passkey alone, use it as the second factor; forged answers
(wrong challenge, wrong origin, wrong RP ID, a counter that did not grow, a reused challenge,
malformed JSON) are refused with a message, never a 500; an IP-address issuer offers none."""

from __future__ import annotations

import re

import pytest

from tests.idp.conftest import WEB_REDIRECT, IdP
from tests.idp.helpers import auth_params, follow, form_fields
from tests.idp.mfa_helpers import MFA_FOR_ADMINS, id_token_claims, local_sign_in, sign_in
from tests.idp.signin.soft_authenticator import SoftAuthenticator

ISSUER = "http://localhost:8000"


@pytest.fixture
def idp_settings():
    return {"CAMPUSID_ISSUER": ISSUER, **MFA_FOR_ADMINS}  # a passkey's RP ID is a domain, never an IP


def _ceremony(browser, page: str, button: str):
    """The options the page's passkey button would fetch: (csrf, mode, handle, publicKey)."""
    assert f'id="{button}"' in page
    _, fields = form_fields(page, "passkey-form")
    r = browser.post("/passkey/options", data={"csrf_token": fields["csrf_token"], "mode": fields["mode"]})
    assert r.status_code == 200, r.text
    return fields, r.json()["handle"], r.json()["publicKey"]


def _post(browser, fields, handle, credential):
    return browser.post("/passkey", data={**fields, "handle": handle, "credential": credential})


def _enrolled(idp, browser) -> SoftAuthenticator:
    page = local_sign_in(browser, "alice", "/account").text
    fields, handle, options = _ceremony(browser, page, "passkey-enrol")
    assert options["rp"]["id"] == "localhost" and options["authenticatorSelection"]["userVerification"] == "required"
    authenticator = SoftAuthenticator("localhost", ISSUER)
    r = _post(browser, fields, handle, authenticator.create(options))
    assert r.status_code == 303 and r.headers["location"] == "/account?done=passkey", r.text[:500]
    assert 'data-count="1"' in browser.get("/account").text
    return authenticator


def test_the_pages_allow_our_own_script_only_where_passkeys_are_offered(idp, browser):
    r = browser.get("/login?next=/account")
    r = follow(browser, r)
    assert 'id="passkey-signin"' in r.text
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe" not in csp


def test_enrol_then_sign_in_with_the_passkey_alone(idp, browser):
    authenticator = _enrolled(idp, browser)
    browser.cookies.clear()
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    r = follow(browser, browser.get("/oauth/authorize", params=flow.params))
    fields, handle, options = _ceremony(browser, r.text, "passkey-signin")
    assert options.get("allowCredentials", []) == []  # discoverable: no username first
    r = follow(browser, _post(browser, fields, handle, authenticator.get(options)))
    if 'id="consent-form"' in r.text:
        action, consent = form_fields(r.text, "consent-form")
        r = browser.post(action, data={**consent, "decision": "allow"})
    from tests.idp.helpers import callback_params

    claims = id_token_claims(idp, browser, flow, callback_params(r.headers["location"]))
    assert {"hwk", "swk"} & set(claims["amr"]) and "pwd" not in claims["amr"]
    assert claims["acr"] == "urn:campusid:acr:mfa"


def test_a_passkey_as_the_second_factor(idp, browser):
    authenticator = _enrolled(idp, browser)
    browser.cookies.clear()
    flow = auth_params(idp.web_id, WEB_REDIRECT)
    r = sign_in(browser, flow, "alice")  # the password, then the second-factor page
    assert 'id="mfa-form"' in r.text
    fields, handle, options = _ceremony(browser, r.text, "passkey-verify")
    allowed = [c["id"] for c in options["allowCredentials"]]
    assert allowed == [re.sub("=", "", authenticator_id(authenticator))]
    r = follow(browser, _post(browser, fields, handle, authenticator.get(options)))
    if 'id="consent-form"' in r.text:
        action, consent = form_fields(r.text, "consent-form")
        r = browser.post(action, data={**consent, "decision": "allow"})
    from tests.idp.helpers import callback_params

    claims = id_token_claims(idp, browser, flow, callback_params(r.headers["location"]))
    assert "pwd" in claims["amr"] and {"hwk", "swk"} & set(claims["amr"]) and "mfa" in claims["amr"]


def authenticator_id(authenticator: SoftAuthenticator) -> str:
    from tests.idp.signin.soft_authenticator import b64u

    return b64u(authenticator.credential_id)


@pytest.mark.parametrize(
    ("lie", "message"),
    [
        ({"challenge": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, "not accepted"),
        ({"origin": "http://evil.example:8000"}, "not accepted"),
        ({"rp_id": "evil.example"}, "not accepted"),
        ({"count_step": 0}, "not accepted"),
    ],
    ids=["wrong-challenge", "wrong-origin", "wrong-rp-id", "counter-did-not-grow"],
)
def test_forged_sign_in_answers_are_refused_with_a_message(idp, browser, lie, message):
    authenticator = _enrolled(idp, browser)
    browser.cookies.clear()
    page = follow(browser, browser.get("/login?next=/account")).text
    fields, handle, options = _ceremony(browser, page, "passkey-signin")
    assert _post(browser, fields, handle, authenticator.get(options)).status_code == 303  # counter 1
    browser.cookies.clear()
    page = follow(browser, browser.get("/login?next=/account")).text
    fields, handle, options = _ceremony(browser, page, "passkey-signin")
    r = _post(browser, fields, handle, authenticator.get(options, **lie))
    assert r.status_code == 400 and message in r.text and 'role="alert"' in r.text
    assert browser.get("/account").status_code == 303  # not signed in
    assert idp.db.events.list(type="mfa_failure")


def test_forged_registrations_are_refused(idp, browser):
    page = local_sign_in(browser, "alice", "/account").text
    for lie in ({"origin": "http://evil.example"}, {"rp_id": "evil.example"}):
        fields, handle, options = _ceremony(browser, page, "passkey-enrol")
        r = _post(browser, fields, handle, SoftAuthenticator("localhost", ISSUER).create(options, **lie))
        assert r.status_code == 400 and "could not be registered" in r.text
    assert 'data-count="0"' in browser.get("/account").text


def test_a_challenge_is_used_once_and_only_by_its_own_page(idp, browser):
    authenticator = _enrolled(idp, browser)
    browser.cookies.clear()
    page = follow(browser, browser.get("/login?next=/account")).text
    fields, handle, options = _ceremony(browser, page, "passkey-signin")
    answer = authenticator.get(options)
    assert _post(browser, fields, handle, answer).status_code == 303
    browser.cookies.clear()
    page = follow(browser, browser.get("/login?next=/account")).text
    fresh, _, _ = _ceremony(browser, page, "passkey-signin")
    r = _post(browser, fresh, handle, answer)  # the used handle, the same answer
    assert r.status_code == 400 and "already used" in r.text
    # a handle from another browser's page is refused by its binding
    with idp.client() as other:
        other_page = follow(other, other.get("/login?next=/account")).text
        other_fields, other_handle, _ = _ceremony(other, other_page, "passkey-signin")
    r = _post(browser, fresh, other_handle, answer)
    assert r.status_code == 400
    assert other_fields["csrf_token"] != fresh["csrf_token"]


@pytest.mark.parametrize(
    "credential",
    ["", "not json", "[]", '{"rawId": 5}', '{"rawId": "%%%"}', "x" * 20_000, '{"id": "' + "A" * 2000 + '"}'],
)
def test_malformed_passkey_answers_get_a_message_never_a_500(idp, browser, credential):
    page = follow(browser, browser.get("/login?next=/account")).text
    fields, handle, _ = _ceremony(browser, page, "passkey-signin")
    r = _post(browser, fields, handle, credential)
    assert r.status_code == 400 and 'role="alert"' in r.text


def test_options_and_answers_need_the_page_csrf_token_and_a_known_step(idp, browser):
    follow(browser, browser.get("/login?next=/account"))
    assert browser.post("/passkey/options", data={"csrf_token": "x", "mode": "signin"}).status_code == 403
    assert browser.post("/passkey/options", data={"csrf_token": "x", "mode": "other"}).status_code == 400
    assert browser.post("/passkey/options", data={"mode": "enrol", "csrf_token": "x"}).status_code == 403  # no session
    r = browser.post("/passkey", data={"csrf_token": "x", "mode": "signin", "handle": "h", "credential": "{}"})
    assert r.status_code == 403


def test_an_ip_address_issuer_offers_no_passkeys(idp_env):
    ip_idp = IdP({**idp_env, "CAMPUSID_ISSUER": "http://127.0.0.1:8000"})
    try:
        with ip_idp.client() as c:
            page = follow(c, c.get("/login?next=/account"))
            assert "passkey" not in page.text and "script-src" not in page.headers["content-security-policy"]
            r = c.post("/passkey/options", data={"csrf_token": "x", "mode": "signin"})
            assert r.status_code == 404 and "host name" in r.json()["error_description"]
    finally:
        ip_idp.store.close()
