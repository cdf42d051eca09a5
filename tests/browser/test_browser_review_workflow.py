"""End to end in headless Chromium against a real `campusid serve`: a developer registers a native
app, an admin rejects it with feedback, the developer fixes and resubmits, the admin approves, the
developer activates, and a real login through the app's authorize URL then reaches its loopback
redirect with a code — where before activation the same URL showed the 400 page."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from tests.conftest import run_cli, start_server
from tests.idp.helpers import PASSWORD, pkce_pair
from tests.portal.helpers import XSS
from tests.screenshots import save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
playwright_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture
def server(idp_env):
    def add(username: str, role: str) -> None:
        extra = ["--student-number", "2024100"] if role == "student" else []
        run_cli(
            idp_env,
            "users",
            "add",
            username,
            "--name",
            username.title(),
            "--role",
            role,
            *extra,
            "--password-stdin",
            stdin=PASSWORD + "\n",
        )

    add("dora", "developer")  # the first command migrates the fresh database; the others can overlap
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(add, ("ada", "sam"), ("admin", "student")))
    srv = start_server(idp_env)
    yield srv
    srv.stop()


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


class Person:
    """One person's browser window (own cookies); fails the test if any page opens a dialog."""

    def __init__(self, browser, issuer: str, username: str, locale: str = "en-US") -> None:
        self.context = browser.new_context(locale=locale, viewport={"width": 1200, "height": 900})
        self.page = self.context.new_page()
        self.issuer, self.username = issuer, username
        self.dialogs: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open(self, path: str):
        response = self.page.goto(self.issuer + path)
        if self.page.locator("#login-form").count():
            self.page.fill("#username", self.username)
            self.page.fill("#password", PASSWORD)
            with self.page.expect_navigation():
                self.page.click("#login-form button[type=submit]")
        return response

    def click(self, selector: str) -> None:
        with self.page.expect_navigation():
            self.page.click(selector)


def _authorize_url(issuer: str, client_id: str, callback: str) -> str:
    _verifier, challenge = pkce_pair()
    params = {
        "client_id": client_id,
        "redirect_uri": callback,
        "response_type": "code",
        "scope": "openid profile",
        "state": "st-123",
        "nonce": "n-456",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    return f"{issuer}/oauth/authorize?{urlencode(params)}"


class _Callback(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server API
        self.server.reached.append(self.path)
        body = b"signed in"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@pytest.fixture
def loopback():
    """The native app's loopback listener (RFC 8252 7.3): records the redirect it receives."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Callback)
    httpd.reached = []
    httpd.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_developer_and_admin_take_a_native_app_from_draft_to_a_working_login(server, chromium, loopback, tmp_path):
    issuer = server.issuer
    dev = Person(chromium, issuer, "dora")
    admin = Person(chromium, issuer, "ada")

    # The developer registers a native app through the portal, signing in with the IdP's own login.
    dev.open("/developer")
    assert dev.page.url == issuer + "/developer"
    dev.click("#new-app")
    dev.page.fill("#name", "Course Planner")
    dev.page.fill("#description", "Plans next term's courses")
    dev.page.check("input[name=type][value=native]")
    dev.page.fill("#redirect_uris", "http://127.0.0.1/callback")
    dev.page.check("input[name='scope.profile']")
    dev.click("#app-form button[type=submit]")
    assert dev.page.locator(".badge.draft").count() >= 1
    client_id = dev.page.inner_text("#client-id").strip()
    dev.click("#submit-app")
    assert dev.page.locator(".badge.under_review").count() >= 1

    # Not active yet: the authorize URL shows the 400 page, never a redirect.
    callback = f"http://127.0.0.1:{loopback.port}/callback"
    url = _authorize_url(issuer, client_id, callback)
    probe = dev.context.new_page()
    response = probe.goto(url)
    assert response.status == 400
    assert "not active" in probe.content()
    probe.close()

    # The admin rejects it with feedback (an XSS payload in it must stay text).
    admin.open(f"/admin/apps/{client_id}")
    assert admin.page.locator("#uri-checks li.ok").count() == 1
    admin.page.fill("#feedback", f"Describe the data you keep. {XSS}")
    admin.click("#reject")
    assert admin.page.locator(".badge.rejected").count() >= 1

    # The developer sees the feedback, edits and resubmits.
    dev.open(f"/developer/apps/{client_id}")
    assert f"Describe the data you keep. {XSS}" in dev.page.inner_text("#latest-feedback")
    dev.click("#edit-app")
    dev.page.fill("#description", "Plans next term's courses; keeps nothing after you sign out")
    dev.click("#app-form button[type=submit]")
    dev.click("#submit-app")

    # The admin approves from the queue (oldest first); screenshot of the console.
    admin.open("/admin")
    assert client_id in admin.page.inner_text("#review-queue")
    admin.click(f"#review-queue a[href$='/admin/apps/{client_id}']")
    save_screenshot(admin.page, "admin-console.png", tmp_path)
    admin.click("#approve")
    assert admin.page.locator(".badge.approved").count() >= 1

    # The developer activates; screenshot of the portal.
    dev.open(f"/developer/apps/{client_id}")
    dev.click("#activate-app")
    assert dev.page.locator(".badge.active").count() >= 1
    save_screenshot(dev.page, "developer-portal.png", tmp_path)

    # A student now signs in through the same authorize URL and reaches the loopback redirect.
    student = Person(chromium, issuer, "sam")
    student.open(url.removeprefix(issuer))
    if student.page.locator("#consent-form").count():
        student.click("#consent-form button[value=allow]")
    assert loopback.reached, student.page.content()[:500]
    query = parse_qs(urlsplit(loopback.reached[0]).query)
    assert query["code"][0] and query["state"] == ["st-123"] and query["iss"] == [issuer]

    assert dev.dialogs == [] and admin.dialogs == [] and student.dialogs == []
