"""End to end in headless Chromium against a real `campusid serve` (docs/mfa.md): a person sets up
an authenticator app on /account/security/totp (the test computes the codes with pyotp from the
secret the page shows), signs out, signs in to an app with password and code, and the app's ID
token says so (`amr` pwd + otp, `acr` urn:campusid:acr:mfa). Then "sign out everywhere else" on
/account ends the session of a second browser context."""

from __future__ import annotations

import os
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pyotp
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from tests.conftest import free_port, start_server
from tests.idp.device_helpers import prepare
from tests.idp.helpers import PASSWORD, pkce_pair

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"
APP = "grades-viewer"
CALLBACK = "http://127.0.0.1/cb"


@pytest.fixture
def served(idp_env):
    prepare(idp_env, APP, people=(("sam", "student"), ("dev", "developer"), ("admin", "admin")), scopes=("openid",))
    port = free_port()
    server = start_server({**idp_env, "CAMPUSID_ISSUER": f"http://localhost:{port}"}, port=port)
    yield server
    server.stop()


@pytest.fixture
def chromium():
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


def _password(page, username: str = "sam") -> None:
    page.fill("#login-form input[name=username]", username)
    page.fill("#login-form input[name=password]", PASSWORD)
    page.click("#login-form button[type=submit]")


def _code_for_next_step(secret: str) -> str:
    """A code the server has not accepted yet: the next step's (±1 step is accepted)."""
    return pyotp.TOTP(secret).at(time.time() + 30)


def test_enrol_totp_sign_out_sign_in_with_password_and_code(served, chromium):
    issuer = served.issuer
    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    # 1. set up the authenticator app from the account page
    page.goto(f"{issuer}/account")
    _password(page)
    page.wait_for_selector("#totp-setup")
    page.click("#totp-setup")
    secret = page.text_content("#totp-secret").strip()
    assert page.get_attribute("#totp-qr", "src").startswith("data:image/svg+xml")
    page.fill("#totp-enrol-form input[name=code]", pyotp.TOTP(secret).now())
    page.click("#totp-enrol-form button[type=submit]")
    page.wait_for_selector(".recovery-code")
    assert page.locator(".recovery-code").count() == 10
    # 2. sign out
    page.goto(f"{issuer}/logout")
    page.click("#logout-form button[type=submit]")
    # 3. sign in to the app: password, then the code
    verifier, challenge = pkce_pair()
    params = {
        "client_id": APP,
        "redirect_uri": CALLBACK,
        "response_type": "code",
        "scope": "openid",
        "state": "s1",
        "nonce": "n1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    page.route(f"{CALLBACK}**", lambda route: route.fulfill(status=200, body="signed in"))
    page.goto(f"{issuer}/oauth/authorize?{urlencode(params)}")
    _password(page)
    page.wait_for_selector("#mfa-form")
    page.fill("#mfa-form input[name=code]", _code_for_next_step(secret))
    page.click("#mfa-form button[type=submit]")
    page.wait_for_selector("#consent-form")
    page.click("#consent-form button[value=allow]")
    page.wait_for_url(f"{CALLBACK}**")
    code = parse_qs(urlsplit(page.url).query)["code"][0]
    token = httpx.post(
        f"{issuer}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": CALLBACK,
            "client_id": APP,
            "code_verifier": verifier,
        },
        timeout=30,
    )
    assert token.status_code == 200, token.text
    keys = KeySet.import_key_set(httpx.get(f"{issuer}/oauth/jwks", timeout=30).json())
    claims = jwt.decode(token.json()["id_token"], keys).claims
    assert {"pwd", "otp"} <= set(claims["amr"])
    assert claims["acr"] == "urn:campusid:acr:mfa"
    context.close()


def test_sign_out_everywhere_else_ends_the_other_browsers_session(served, chromium):
    issuer = served.issuer
    first, second = chromium.new_context(), chromium.new_context()
    a, b = first.new_page(), second.new_page()
    for page in (a, b):
        page.set_default_timeout(30_000)
        page.goto(f"{issuer}/account")
        _password(page)
        page.wait_for_selector("#sessions")
    a.reload()
    assert a.locator("[data-session]").count() == 1  # the other browser
    a.click("#signout-others button[type=submit]")
    a.wait_for_selector(".notice")
    assert a.locator("[data-session]").count() == 0
    b.goto(f"{issuer}/account")
    b.wait_for_selector("#login-form")  # signed out there
    first.close()
    second.close()


def test_passkey_enrol_then_sign_in_with_it_alone_in_chromium(served, chromium):
    """Chromium's virtual authenticator (the DevTools WebAuthn domain) plays a platform passkey."""
    issuer = served.issuer
    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    cdp = context.new_cdp_session(page)
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
    page.goto(f"{issuer}/account")
    _password(page)
    page.wait_for_selector("#passkey-enrol")
    page.click("#passkey-enrol")
    page.wait_for_selector("#passkey-count[data-count='1']")
    page.goto(f"{issuer}/logout")
    page.click("#logout-form button[type=submit]")
    verifier, challenge = pkce_pair()
    params = {
        "client_id": APP,
        "redirect_uri": CALLBACK,
        "response_type": "code",
        "scope": "openid",
        "state": "s2",
        "nonce": "n2",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    page.route(f"{CALLBACK}**", lambda route: route.fulfill(status=200, body="signed in"))
    page.goto(f"{issuer}/oauth/authorize?{urlencode(params)}")
    page.click("#passkey-signin")  # no username, no password
    page.wait_for_selector("#consent-form")
    page.click("#consent-form button[value=allow]")
    page.wait_for_url(f"{CALLBACK}**")
    code = parse_qs(urlsplit(page.url).query)["code"][0]
    token = httpx.post(
        f"{issuer}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": CALLBACK,
            "client_id": APP,
            "code_verifier": verifier,
        },
        timeout=30,
    )
    assert token.status_code == 200, token.text
    keys = KeySet.import_key_set(httpx.get(f"{issuer}/oauth/jwks", timeout=30).json())
    claims = jwt.decode(token.json()["id_token"], keys).claims
    assert {"hwk", "swk"} & set(claims["amr"]) and "pwd" not in claims["amr"]
    context.close()
