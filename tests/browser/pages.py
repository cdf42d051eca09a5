"""Page objects of the Playwright tests: the IdP's sign-in pages (the login form, the second factor,
consent) and the review of an app (the developer portal, the admin console), as a person uses them
in Chromium (tests/conftest.py's `chromium`). Each method is one step a person takes; the tests
assert between the steps."""

from __future__ import annotations

from tests.idp.helpers import PASSWORD


class SignInPage:
    """The IdP's sign-in pages in one tab: `#login-form`, the second factor `#mfa-form` and the
    consent `#consent-form`. Each answer waits for the page the form leads to, or, given `until`
    (a URL pattern), for the browser to be at that URL: a callback no server answers is never a
    loaded page, only a URL."""

    def __init__(self, page) -> None:
        self.page = page

    def shown(self) -> bool:
        return self.page.locator("#login-form").count() > 0

    def sign_in(self, username: str, password: str = PASSWORD, *, until: str | None = None) -> None:
        self.page.fill("#login-form input[name=username]", username)
        self.page.fill("#login-form input[name=password]", password)
        self._submit("#login-form button[type=submit]", until)

    def second_factor(self, code: str, *, until: str | None = None) -> None:
        self.page.wait_for_selector("#mfa-form")
        self.page.fill("#mfa-form input[name=code]", code)
        self._submit("#mfa-form button[type=submit]", until)

    def asks_consent(self) -> bool:
        return self.page.locator("#consent-form").count() > 0

    def consent(self, decision: str = "allow", *, until: str | None = None) -> None:
        """Allow or deny on the consent page (an app's, or a device's)."""
        self.page.wait_for_selector("#consent-form")
        self._submit(f"#consent-form button[value={decision}]", until)

    def _submit(self, button: str, until: str | None) -> None:
        if until is not None:
            self.page.click(button)
            self.page.wait_for_url(until)
            return
        with self.page.expect_navigation():
            self.page.click(button)


class Person:
    """One person's browser window (cookies of its own) on the IdP at `issuer`: opens its pages,
    signing in on the login page whenever one asks; every dialog a page opens is dismissed and
    recorded in `dialogs`, for the test to assert there was none."""

    def __init__(
        self,
        browser,
        issuer: str,
        username: str,
        password: str = PASSWORD,
        *,
        locale: str = "en-US",
        viewport: dict | None = None,
        timeout: float | None = None,
    ) -> None:
        self.context = browser.new_context(locale=locale, viewport=viewport or {"width": 1200, "height": 900})
        if timeout is not None:
            self.context.set_default_timeout(timeout)
        self.page = self.context.new_page()
        self.issuer, self.username, self.password = issuer, username, password
        self.idp = SignInPage(self.page)  # its sign-in pages in this window
        self.dialogs: list[str] = []
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))

    def open(self, path: str):
        """Go to `path` on the IdP (signing in if the login page shows); the first response."""
        response = self.page.goto(self.issuer + path)
        if self.idp.shown():
            self.idp.sign_in(self.username, self.password)
        return response

    def click(self, selector: str) -> None:
        """Click what leads to another page, and wait for it."""
        with self.page.expect_navigation():
            self.page.click(selector)

    def close(self) -> None:
        self.context.close()


class DeveloperPortal:
    """The developer portal (/developer) as `person` uses it."""

    def __init__(self, person: Person) -> None:
        self.person, self.page = person, person.page

    def open(self) -> None:
        self.person.open("/developer")

    def open_app(self, client_id: str) -> None:
        self.person.open(f"/developer/apps/{client_id}")

    def register(
        self, name: str, description: str, app_type: str, redirect_uris: str, scopes: tuple[str, ...] = ()
    ) -> str:
        """From the portal's front page: a new app, saved as a draft; its client id."""
        self.person.click("#new-app")
        self.page.fill("#name", name)
        self.page.fill("#description", description)
        self.page.check(f"input[name=type][value={app_type}]")
        self.page.fill("#redirect_uris", redirect_uris)
        for scope in scopes:
            self.page.check(f"input[name='scope.{scope}']")
        self.person.click("#app-form button[type=submit]")
        return self.page.inner_text("#client-id").strip()

    def edit(self, description: str) -> None:
        """On the app's page: change its description and save."""
        self.person.click("#edit-app")
        self.page.fill("#description", description)
        self.person.click("#app-form button[type=submit]")

    def submit(self) -> None:
        """On the app's page: submit it for review."""
        self.person.click("#submit-app")

    def activate(self) -> None:
        """On the app's page: activate the approved app."""
        self.person.click("#activate-app")


class ReviewConsole:
    """The admin console's review of apps (/admin) as `person` uses it."""

    def __init__(self, person: Person) -> None:
        self.person, self.page = person, person.page

    def open_queue(self) -> None:
        self.person.open("/admin")

    def open_from_queue(self, client_id: str) -> None:
        self.person.click(f"#review-queue a[href$='/admin/apps/{client_id}']")

    def open_app(self, client_id: str) -> None:
        self.person.open(f"/admin/apps/{client_id}")

    def reject(self, feedback: str) -> None:
        """On the app's review page: reject it with this feedback."""
        self.page.fill("#feedback", feedback)
        self.person.click("#reject")

    def approve(self) -> None:
        """On the app's review page: approve it."""
        self.person.click("#approve")
