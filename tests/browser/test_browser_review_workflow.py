"""End to end in headless Chromium against a real `campusid serve`: a developer registers a native
app, an admin rejects it with feedback, the developer fixes and resubmits, the admin approves, the
developer activates, and a real login through the app's authorize URL then reaches its loopback
redirect with a code — where before activation the same URL showed the 400 page."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.browser.pages import DeveloperPortal, Person, ReviewConsole
from tests.idp.helpers import auth_params
from tests.portal.helpers import XSS
from tests.screenshots import save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
pytest.importorskip("playwright.sync_api")


@pytest.fixture
def server(serve):
    return serve(people=(("dora", "developer"), ("ada", "admin"), ("sam", "student")))


def test_developer_and_admin_take_a_native_app_from_draft_to_a_working_login(server, chromium, loopback, tmp_path):
    issuer = server.issuer
    dev = Person(chromium, issuer, "dora")
    admin = Person(chromium, issuer, "ada")
    portal, console = DeveloperPortal(dev), ReviewConsole(admin)

    # The developer registers a native app through the portal, signing in with the IdP's own login.
    portal.open()
    assert dev.page.url == issuer + "/developer"
    client_id = portal.register(
        "Course Planner", "Plans next term's courses", "native", "http://127.0.0.1/callback", scopes=("profile",)
    )
    assert dev.page.locator(".badge.draft").count() >= 1
    portal.submit()
    assert dev.page.locator(".badge.under_review").count() >= 1

    # Not active yet: the authorize URL shows the 400 page, never a redirect.
    callback = f"http://127.0.0.1:{loopback.port}/callback"
    flow = auth_params(client_id, callback, scope="openid profile", state="st-123", nonce="n-456")
    url = f"{issuer}/oauth/authorize?{urlencode(flow.params)}"
    probe = dev.context.new_page()
    response = probe.goto(url)
    assert response.status == 400
    assert "not active" in probe.content()
    probe.close()

    # The admin rejects it with feedback (an XSS payload in it must stay text).
    console.open_app(client_id)
    assert admin.page.locator("#uri-checks li.ok").count() == 1
    console.reject(f"Describe the data you keep. {XSS}")
    assert admin.page.locator(".badge.rejected").count() >= 1

    # The developer sees the feedback, edits and resubmits.
    portal.open_app(client_id)
    assert f"Describe the data you keep. {XSS}" in dev.page.inner_text("#latest-feedback")
    portal.edit(description="Plans next term's courses; keeps nothing after you sign out")
    portal.submit()

    # The admin approves from the queue (oldest first); screenshot of the console.
    console.open_queue()
    assert client_id in admin.page.inner_text("#review-queue")
    console.open_from_queue(client_id)
    save_screenshot(admin.page, "admin-console.png", tmp_path)
    console.approve()
    assert admin.page.locator(".badge.approved").count() >= 1

    # The developer activates; screenshot of the portal.
    portal.open_app(client_id)
    portal.activate()
    assert dev.page.locator(".badge.active").count() >= 1
    save_screenshot(dev.page, "developer-portal.png", tmp_path)

    # A student now signs in through the same authorize URL and reaches the loopback redirect.
    student = Person(chromium, issuer, "sam")
    student.open(url.removeprefix(issuer))
    if student.idp.asks_consent():
        student.idp.consent("allow")
    assert loopback.reached, student.page.content()[:500]
    query = parse_qs(urlsplit(loopback.reached[0]).query)
    assert query["code"][0] and query["state"] == ["st-123"] and query["iss"] == [issuer]

    assert dev.dialogs == [] and admin.dialogs == [] and student.dialogs == []
