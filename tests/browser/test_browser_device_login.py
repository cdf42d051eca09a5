"""End to end in headless Chromium against a real `campusid serve`: a script plays the device
(`OIDCClient.device_login()`, polling at the IdP's interval) and a person plays themselves on the
/device page — enters the code as they read it (lower case, a space for the dash), signs in, reads
the consent page that names the app and warns them, and allows. The script gets tokens whose ID
token verifies against the published JWKS. The next sign-in the person denies: the script gets
access_denied."""

from __future__ import annotations

import queue
import threading

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from campusid.oidc_client import DeviceAccessDeniedError, DeviceAuthorization, OIDCClient
from tests.browser.pages import Person
from tests.screenshots import save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
pytest.importorskip("playwright.sync_api")


@pytest.fixture
def served(serve):
    return serve("lab-printer-bot", scopes=("openid", "profile")), "lab-printer-bot"


class Device:
    """The script on the machine without a browser: device_login() on a thread of its own."""

    def __init__(self, issuer: str, client_id: str) -> None:
        self.shown: queue.Queue[DeviceAuthorization] = queue.Queue()
        self.outcome: dict = {}
        self.thread = threading.Thread(target=self._run, args=(issuer, client_id), daemon=True)
        self.thread.start()

    def _run(self, issuer: str, client_id: str) -> None:
        with OIDCClient(issuer, client_id) as client:
            try:
                self.outcome["tokens"] = client.device_login(scope="openid profile", on_code=self.shown.put)
            except Exception as exc:  # handed to the test, which asserts on it
                self.outcome["error"] = exc

    def code(self) -> DeviceAuthorization:
        try:
            return self.shown.get(timeout=30)
        except queue.Empty:
            raise AssertionError(f"the device showed no code: {self.outcome}") from None

    def result(self) -> dict:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the device did not finish polling"
        return self.outcome


def test_a_person_allows_a_device_in_chromium_and_denies_the_next(served, chromium, tmp_path):
    server, client_id = served
    device = Device(server.issuer, client_id)
    shown = device.code()
    assert shown.verification_uri == server.issuer + "/device"

    person = Person(chromium, server.issuer, "sam", viewport={"width": 900, "height": 800})
    page = person.page
    page.goto(shown.verification_uri)
    page.fill("#user_code", shown.user_code.lower().replace("-", " "))  # typed as read
    person.click("#device-form button[type=submit]")
    assert page.locator("#login-form").count() == 1 and "Lab Printer Bot" in page.content()
    person.idp.sign_in("sam")
    assert page.url.startswith(server.issuer + "/consent?interaction=")  # the one consent page, for this sign-in
    assert "Lab Printer Bot" in page.inner_text("#device-consent-title")
    assert "recognise" in page.inner_text("#device-warning")
    save_screenshot(page, "device-consent.png", tmp_path)
    person.idp.consent("allow")
    assert page.get_attribute("#device-outcome", "data-outcome") == "allowed"

    outcome = device.result()
    assert "error" not in outcome, outcome
    tokens = outcome["tokens"]
    keys = KeySet.import_key_set(httpx.get(server.issuer + "/oauth/jwks").json())
    claims = jwt.decode(tokens.id_token, keys, algorithms=["RS256"]).claims
    assert claims["iss"] == server.issuer and claims["aud"] == client_id and claims["sub"] == tokens.id_claims["sub"]
    assert tokens.refresh_token and tokens.scope == "openid profile"
    userinfo = httpx.get(server.issuer + "/oauth/userinfo", headers={"Authorization": f"Bearer {tokens.access_token}"})
    assert userinfo.json()["name"] == "Sam"

    # The next request: the person, still signed in, follows the complete URI and denies.
    second = Device(server.issuer, client_id)
    shown = second.code()
    page.goto(shown.verification_uri_complete)
    assert page.input_value("#user_code") == shown.user_code  # filled in, not submitted
    person.click("#device-form button[type=submit]")
    assert page.url.startswith(server.issuer + "/consent?interaction=")  # the one consent page, for this sign-in
    person.idp.consent("deny")
    assert page.get_attribute("#device-outcome", "data-outcome") == "denied"
    assert isinstance(second.result().get("error"), DeviceAccessDeniedError)
    assert person.dialogs == []
    person.close()
