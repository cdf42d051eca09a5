"""End to end in headless Chromium against a real `campusid serve` (docs/mfa.md): a person sets up
an authenticator app on /account/security/totp (the test computes the codes with pyotp from the
secret the page shows), signs out, signs in to an app with password and code, and the app's ID
token says so (`amr` pwd + otp, `acr` urn:campusid:acr:mfa). Then "sign out everywhere else" on
/account ends the session of a second browser context."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pyotp
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.browser.pages import Person, SignInPage
from tests.idp.helpers import auth_params, code_exchange

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
pytest.importorskip("playwright.sync_api")

APP = "grades-viewer"
CALLBACK = "http://127.0.0.1/cb"


@pytest.fixture
def served(serve):
    return serve(APP, scopes=("openid",), host="localhost")  # a passkey's RP ID is a domain


def _code_for_next_step(secret: str) -> str:
    """A code the server has not accepted yet: the next step's (±1 step is accepted)."""
    return pyotp.TOTP(secret).at(time.time() + 30)


def _app_request(page, state: str, nonce: str):
    """The app's authorization request, its callback answered in `page`'s browser: the flow (for the
    code's exchange) and the request's path."""
    flow = auth_params(APP, CALLBACK, scope="openid", state=state, nonce=nonce)
    page.route(f"{CALLBACK}**", lambda route: route.fulfill(status=200, body="signed in"))
    return flow, f"/oauth/authorize?{urlencode(flow.params)}"


def _id_token_claims(issuer: str, page, flow) -> dict:
    """The code the callback got, redeemed as the app: its ID token's claims, verified against the JWKS."""
    code = parse_qs(urlsplit(page.url).query)["code"][0]
    token = httpx.post(f"{issuer}/oauth/token", data=code_exchange(flow, code, CALLBACK, APP), timeout=30)
    assert token.status_code == 200, token.text
    keys = KeySet.import_key_set(httpx.get(f"{issuer}/oauth/jwks", timeout=30).json())
    return jwt.decode(token.json()["id_token"], keys).claims


def _sign_out(person: Person) -> None:
    person.page.goto(f"{person.issuer}/logout")
    person.click("#logout-form button[type=submit]")


def test_enrol_totp_sign_out_sign_in_with_password_and_code(served, chromium):
    issuer = served.issuer
    sam = Person(chromium, issuer, "sam", timeout=30_000)
    page = sam.page
    # 1. set up the authenticator app from the account page
    sam.open("/account")
    page.wait_for_selector("#totp-setup")
    page.click("#totp-setup")
    secret = page.text_content("#totp-secret").strip()
    assert page.get_attribute("#totp-qr", "src").startswith("data:image/svg+xml")
    page.fill("#totp-enrol-form input[name=code]", pyotp.TOTP(secret).now())
    page.click("#totp-enrol-form button[type=submit]")
    page.wait_for_selector(".recovery-code")
    assert page.locator(".recovery-code").count() == 10
    # 2. sign out
    _sign_out(sam)
    # 3. sign in to the app: password, then the code
    flow, request = _app_request(page, "s1", "n1")
    sam.open(request)  # the login page: the password
    sam.idp.second_factor(_code_for_next_step(secret))
    sam.idp.consent("allow", until=f"{CALLBACK}**")
    claims = _id_token_claims(issuer, page, flow)
    assert {"pwd", "otp"} <= set(claims["amr"])
    assert claims["acr"] == "urn:campusid:acr:mfa"
    sam.close()


def test_sign_out_everywhere_else_ends_the_other_browsers_session(served, chromium):
    issuer = served.issuer
    a, b = Person(chromium, issuer, "sam", timeout=30_000), Person(chromium, issuer, "sam", timeout=30_000)
    for person in (a, b):
        person.open("/account")
        person.page.wait_for_selector("#sessions")
    a.page.reload()
    assert a.page.locator("[data-session]").count() == 1  # the other browser
    a.page.click("#signout-others button[type=submit]")
    a.page.wait_for_selector(".notice")
    assert a.page.locator("[data-session]").count() == 0
    b.page.goto(f"{issuer}/account")
    b.page.wait_for_selector("#login-form")  # signed out there
    a.close()
    b.close()


def test_passkey_enrol_then_sign_in_with_it_alone_in_chromium(served, chromium):
    """Chromium's virtual authenticator (the DevTools WebAuthn domain) plays a platform passkey."""
    issuer = served.issuer
    sam = Person(chromium, issuer, "sam", timeout=30_000)
    page = sam.page
    cdp = sam.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
            }
        },
    )
    sam.open("/account")
    page.wait_for_selector("#passkey-enrol")
    page.click("#passkey-enrol")
    page.wait_for_selector("#passkey-count[data-count='1']")
    _sign_out(sam)
    flow, request = _app_request(page, "s2", "n2")
    page.goto(issuer + request)
    page.click("#passkey-signin")  # no username, no password
    sam.idp.consent("allow", until=f"{CALLBACK}**")
    claims = _id_token_claims(issuer, page, flow)
    assert {"hwk", "swk"} & set(claims["amr"]) and "pwd" not in claims["amr"]
    sam.close()


def test_an_enrolment_completes_after_the_console_was_opened_in_another_tab(idp_env, serve, chromium, loopback):
    """As a new admin tried it: signing in to an app, led to set up an authenticator (admins must
    have one), they open /admin in another tab of the same browser before typing the code, then
    confirm a correct code on the enrolment page that was shown: the enrolment completes with its
    ten recovery codes and the sign-in goes on to the app; the console's tab signs in after, with
    the new factor."""
    idp_env["CAMPUSID_MFA_REQUIRED_ROLES"] = "admin"
    issuer = serve(APP).issuer
    admin = Person(chromium, issuer, "admin", timeout=30_000)
    app_tab = admin.page
    callback = f"http://127.0.0.1:{loopback.port}/cb"  # the app's loopback listener (RFC 8252 7.3)
    flow = auth_params(APP, callback, scope="openid", state="s9", nonce="n9")
    admin.open(
        f"/oauth/authorize?{urlencode(flow.params)}"
    )  # the login page: the password, then the enrolment the policy asks for
    app_tab.wait_for_selector("#totp-enrol-form")
    secret = app_tab.text_content("#totp-secret").strip()

    console_tab = admin.context.new_page()  # another tab, the same cookies
    console_tab.goto(issuer + "/admin")
    console = SignInPage(console_tab)
    assert console.shown()  # the console begins a sign-in of its own

    app_tab.fill("#totp-enrol-form input[name=code]", pyotp.TOTP(secret).now())
    app_tab.click("#totp-enrol-form button[type=submit]")
    app_tab.wait_for_selector(".recovery-code")
    assert app_tab.locator(".recovery-code").count() == 10
    admin.click("#continue-form button[type=submit]")
    admin.idp.consent("allow")
    code = parse_qs(urlsplit(app_tab.url).query)["code"][0]
    token = httpx.post(f"{issuer}/oauth/token", data=code_exchange(flow, code, callback, APP), timeout=30)
    claims = jwt.decode(
        token.json()["id_token"], KeySet.import_key_set(httpx.get(f"{issuer}/oauth/jwks").json())
    ).claims
    assert claims["acr"] == "urn:campusid:acr:mfa" and "otp" in claims["amr"]

    console.sign_in("admin")
    console.second_factor(_code_for_next_step(secret))
    assert urlsplit(console_tab.url).path == "/admin" and console_tab.locator("nav.tabs").count() == 1  # the console
    assert admin.dialogs == []
    admin.close()
