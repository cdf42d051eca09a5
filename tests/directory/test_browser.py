"""In headless Chromium against a real `campusid serve` process signing in against the real slapd:
a member of the directory's admin group types their directory username and password into the
login page (which says university accounts sign in here) and reaches the admin console, where the
users table says the account comes from the university directory."""

from __future__ import annotations

import pytest

from tests.browser.pages import SignInPage
from tests.conftest import start_server
from tests.directory.conftest import ldap_env

pytestmark = [pytest.mark.browser, pytest.mark.e2e]
pytest.importorskip("playwright.sync_api")


def test_a_directory_admin_signs_in_through_the_login_page_in_chromium(idp_env, slapd, chromium):
    server = start_server({**idp_env, **ldap_env(slapd.url)})
    try:
        page = chromium.new_page()
        page.goto(f"{server.issuer}/login?next=/admin/users")
        assert "university account" in page.locator("#account-source").inner_text()
        SignInPage(page).sign_in("ada", "ada-pw")
        page.wait_for_url(f"{server.issuer}/admin/users", timeout=30_000)
        row = page.locator("#users tr", has_text="ada")
        assert "University directory" in row.inner_text()
    finally:
        server.stop()
