"""The example web client ("My grades") in headless Chromium against a real `campusid demo`:
login, consent and the grades table; and three failed callbacks (a tampered state, a replayed
callback URL, an ID token for another audience) that each end in "Login failed — start again",
whose button starts a fresh login that succeeds.

`campusid demo` registers `campusid-web-demo` for port 8001. So that these tests never depend on that
port being free, they register a web client for the port the web client really gets (through the
same services as `campusid apps …`; the running server sees it at once).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest
from examples.web_client import Settings

from campusid.oidc_client import IDTokenError, OIDCClient
from tests.browser.pages import SignInPage
from tests.conftest import CHROMIUM
from tests.examples_web_client.harness import Demo, WebClientProcess, WebClientThread, free_port
from tests.idp.helpers import Flow, auth_params, basic, login_through_pages
from tests.screenshots import save_screenshot

pytestmark = [pytest.mark.browser, pytest.mark.e2e]

ALICE_COURSES = {"CS101", "MA101", "PH101", "CS102", "EN101"}
# (4*4.0 + 5*3.7 + 3*3.0 + 4*3.7 + 2*4.0) / 18 credits
ALICE_GPA = "3.68"

pytest.importorskip("playwright.sync_api")
if not Path(CHROMIUM).exists():  # pragma: no cover - depends on the machine
    pytest.skip(f"{CHROMIUM} is not installed", allow_module_level=True)


# --- servers (one demo IdP and one web client for the module) --------------------------------


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    import os
    import secrets

    data = tmp_path_factory.mktemp("demo")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPUSID_")}
    env.update(
        {
            "CAMPUSID_DATA_DIR": str(data),
            "CAMPUSID_DATABASE_URL": f"sqlite:///{data / 'campusid.db'}",
            "CAMPUSID_SECRET_KEY": secrets.token_urlsafe(48),
        }
    )
    server = Demo(env)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def web_client(demo):
    port = free_port()
    secret = demo.register_web_client(port, "mygrades-browser-test")
    app = WebClientProcess(demo.issuer, "mygrades-browser-test", secret, port)
    yield app
    app.stop()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 1000, "height": 720})
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


# --- browser steps ------------------------------------------------------------------------------


def sign_in_at_idp(page, demo: Demo, username: str = "alice", until: str = "#grades, #login-failed") -> bool:
    """Fill the IdP's login form, allow on the consent page when asked, and wait for ``until``.

    Returns whether consent was asked."""
    idp = SignInPage(page)
    page.wait_for_selector("#login-form")
    idp.sign_in(username, demo.password(username))
    page.wait_for_selector(f"#consent-form, {until}")
    asked = idp.asks_consent()
    if asked:
        idp.consent("allow")
        page.wait_for_selector(until)
    return asked


def assert_grades_page(page) -> None:
    page.wait_for_selector("#grades")
    assert page.inner_text("#student-name") == "Alice Zhang"
    codes = {c.strip() for c in page.locator("#grades tbody tr.grade td.code").all_inner_texts()}
    assert codes == ALICE_COURSES
    assert page.inner_text("#gpa") == ALICE_GPA


def assert_login_failed_then_start_again(page, demo: Demo) -> str:
    page.wait_for_selector("#login-failed")
    assert "Login failed" in page.inner_text("h1") and "start again" in page.inner_text("h1")
    reason = page.inner_text("#reason")
    page.click("#start-again")
    # a fresh authorization request; the IdP session and the earlier consent make it immediate,
    # but if the IdP asks again the student simply signs in
    page.wait_for_selector("#grades, #login-form, #consent-form")
    if not page.locator("#grades").count():
        sign_in_at_idp(page, demo)
    assert_grades_page(page)
    return reason


def record_authorize_requests(page, demo: Demo) -> list[str]:
    urls: list[str] = []
    page.on("request", lambda r: r.url.startswith(demo.issuer + "/oauth/authorize") and urls.append(r.url))
    return urls


def is_callback(url: str, base: str) -> bool:
    return url.startswith(base + "/callback?")


# --- the tests ----------------------------------------------------------------------------------


def test_demo_registers_the_web_client_with_its_secret(demo):
    web = next(c for c in demo.info["clients"] if c["client_id"] == "campusid-web-demo")
    assert web["type"] == "web" and web["client_secret"]
    assert web["redirect_uris"] == ["http://127.0.0.1:8001/callback"]


def test_login_consent_and_grades_table(page, demo, web_client, tmp_path):
    authorize_urls = record_authorize_requests(page, demo)
    page.goto(web_client.url + "/")
    page.click("#sign-in")
    assert sign_in_at_idp(page, demo), "the first login of alice at this client asks for consent"
    assert_grades_page(page)
    assert page.url == web_client.url + "/"
    assert len(page.locator("#grades tbody tr.grade").all()) == 5
    # the authorization request carried PKCE S256, state and nonce, and never the verifier or secret
    query = dict(parse_qsl(urlsplit(authorize_urls[0]).query))
    assert query["code_challenge_method"] == "S256" and query["state"] and query["nonce"]
    assert "code_verifier" not in query and "client_secret" not in query
    # the browser holds only an opaque session cookie: no token in cookies or in the page
    cookies = page.context.cookies()
    assert [c["name"] for c in cookies if c["domain"] == "127.0.0.1" and c["name"].startswith("mygrades")] == [
        "mygrades_session"
    ]
    assert "eyJ" not in page.content()
    save_screenshot(page, "web-client-grades.png", tmp_path)


def test_a_chinese_browser_gets_my_grades_and_campusid_in_chinese(chromium, demo, web_client):
    """The web client reads campusid's catalogue too, and asks campusid for its pages in the reader's
    language (OIDC ui_locales), so the whole sign-in reads in Chinese."""
    context = chromium.new_context(locale="zh-CN", viewport={"width": 1000, "height": 720})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        authorize_urls = record_authorize_requests(page, demo)
        page.goto(web_client.url + "/")
        assert page.get_attribute("html", "lang") == "zh-CN" and page.inner_text("#sign-in") == "统一身份认证登录"
        page.click("#sign-in")
        page.wait_for_selector("#login-form")
        assert dict(parse_qsl(urlsplit(authorize_urls[0]).query))["ui_locales"] == "zh-CN"
        assert "用户名/学工号" in page.inner_text("#login-form") and page.get_attribute("html", "lang") == "zh-CN"
        sign_in_at_idp(page, demo)
        page.wait_for_selector("#grades")
        assert "学分加权平均绩点" in page.inner_text("#grades") and page.inner_text("#gpa") == ALICE_GPA
    finally:
        context.close()


def test_tampered_state_fails_and_start_again_succeeds(page, demo, web_client):
    """The browser starts a login (the web client keeps its state, nonce and verifier); the user signs
    in at the IdP (here with httpx, a second user agent, because Playwright cannot hold back a
    redirect) and the browser then arrives at the callback with the genuine code but a changed state."""
    authorize_urls = record_authorize_requests(page, demo)
    page.goto(web_client.url + "/")
    page.click("#sign-in")
    page.wait_for_selector("#login-form")
    params = dict(parse_qsl(urlsplit(authorize_urls[0]).query))
    with httpx.Client(follow_redirects=False, timeout=10) as other_agent:
        callback = login_through_pages(
            other_agent, demo.issuer, Flow(params, verifier=""), "alice", password=demo.password("alice")
        )
    assert callback["code"] and callback["state"] == params["state"] and callback["iss"] == demo.issuer
    genuine = f"{web_client.url}/callback?{urlencode(callback)}"
    tampered = f"{web_client.url}/callback?{urlencode({**callback, 'state': callback['state'][::-1]})}"

    page.goto(tampered)
    page.wait_for_selector("#login-failed")
    assert "does not belong" in page.inner_text("#reason")
    # the genuine URL cannot complete that login afterwards either: the attempt is over
    page.goto(genuine)
    page.wait_for_selector("#login-failed")
    assert_login_failed_then_start_again(page, demo)


def test_replayed_callback_url_fails_and_start_again_succeeds(page, demo, web_client):
    callbacks: list[str] = []
    page.on("request", lambda r: is_callback(r.url, web_client.url) and callbacks.append(r.url))
    page.goto(web_client.url + "/")
    page.click("#sign-in")
    sign_in_at_idp(page, demo)
    assert_grades_page(page)
    assert len(callbacks) == 1

    page.goto(callbacks[0])  # replay: the same code and state again
    reason = assert_login_failed_then_start_again(page, demo)
    assert "already used" in reason
    assert len(callbacks) == 3 and callbacks[2] != callbacks[0]  # the fresh login got its own code


class SwapIDToken(httpx.AsyncBaseTransport):
    """Stands between the web client and the real IdP and, once armed, replaces the ID token of a
    token response with another genuine one (a token substitution): everything else about the
    response is real, so only the audience check can catch it."""

    def __init__(self, token_endpoint: str) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.token_endpoint = token_endpoint
        self.replacement: str | None = None
        self.swapped = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        if self.replacement is None or request.method != "POST" or str(request.url) != self.token_endpoint:
            return response
        await response.aread()
        body = json.loads(response.content)
        assert response.status_code == 200, body
        body["id_token"], self.replacement = self.replacement, None
        self.swapped += 1
        return httpx.Response(200, json=body, headers={"Cache-Control": "no-store"})

    async def aclose(self) -> None:
        await self.inner.aclose()


def id_token_for_another_client(demo: Demo, nonce: str) -> tuple[str, str]:
    """A real ID token of the IdP for alice with this nonce, issued to a different web client."""
    other_port = free_port()
    other_id = "another-web-app"
    secret = demo.register_web_client(other_port, other_id)
    redirect = f"http://127.0.0.1:{other_port}/callback"
    flow = auth_params(other_id, redirect, scope="openid profile", nonce=nonce)
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        cb = login_through_pages(browser, demo.issuer, flow, "alice", password=demo.password("alice"))
        r = browser.post(
            demo.issuer + "/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": cb["code"],
                "redirect_uri": redirect,
                "code_verifier": flow.verifier,
            },
            headers=basic(other_id, secret),
        )
    assert r.status_code == 200, r.text
    return r.json()["id_token"], other_id


def test_id_token_for_another_audience_fails_and_start_again_succeeds(page, demo):
    port = free_port()
    client_id = "mygrades-swap-test"
    secret = demo.register_web_client(port, client_id)
    swap = SwapIDToken(demo.issuer + "/oauth/token")
    settings = Settings(issuer=demo.issuer, client_id=client_id, client_secret=secret, port=port)
    app = WebClientThread(settings, http=httpx.AsyncClient(transport=swap, timeout=10))
    try:
        authorize_urls = record_authorize_requests(page, demo)
        page.goto(app.url + "/")
        page.click("#sign-in")
        page.wait_for_selector("#login-form")
        nonce = dict(parse_qsl(urlsplit(authorize_urls[0]).query))["nonce"]

        other_token, other_id = id_token_for_another_client(demo, nonce)
        # the substitute is genuine and carries this login's nonce: only its audience is wrong
        with OIDCClient(demo.issuer, client_id, secret) as rp, pytest.raises(IDTokenError, match="aud"):
            rp.validate_id_token(other_token, nonce=nonce)
        with OIDCClient(demo.issuer, other_id, "unused") as other_rp:
            assert other_rp.validate_id_token(other_token, nonce=nonce)["aud"] == other_id

        swap.replacement = other_token
        sign_in_at_idp(page, demo)
        reason = assert_login_failed_then_start_again(page, demo)
        assert swap.swapped == 1 and "identity token" in reason
    finally:
        app.stop()
