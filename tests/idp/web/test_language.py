"""Which language the pages speak (idp/web/language.py, pages/language.py): OIDC `ui_locales` first,
carried through the pending sign-in to its login, second-factor and consent pages; then the language
switch, remembered by a cookie; then Accept-Language; English by default. Every page says its
language in `<html lang>`, and discovery lists the languages (`ui_locales_supported`)."""

from __future__ import annotations

import html
import re
import time
from urllib.parse import urlencode, urlsplit

import pyotp
import pytest

from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import callback_params, follow, form_fields, post_login
from tests.idp.mfa_helpers import enrol_totp, local_sign_in

CHINESE = "zh-CN,zh;q=0.9"


def chinese(page: str) -> bool:
    return '<html lang="zh-CN">' in page and "统一身份认证" in page and "Sign-in service" not in page


def english(page: str) -> bool:
    return '<html lang="en">' in page and "Sign-in service" in page and "统一身份认证" not in page


def switch_link(page: str, tag: str) -> str:
    """The language switch's link to `tag` (a plain link: no script needed)."""
    match = re.search(rf'<a href="([^"]+)" lang="{tag}" hreflang="{tag}">', page)
    assert match, "no language switch to " + tag
    return html.unescape(match.group(1))


def authorize(browser, **extra):
    from tests.idp.helpers import auth_params

    flow = auth_params("web-app", WEB_REDIRECT, **extra)
    return flow, browser.get(f"/oauth/authorize?{urlencode(flow.params)}")


def submit(browser, page: str, form: str, **answer):
    action, fields = form_fields(page, form)
    return follow(browser, browser.post(action, data={**fields, **answer}))


def allow(browser, page: str):
    action, fields = form_fields(page, "consent-form")
    return browser.post(action, data={**fields, "decision": "allow"})


def enrolled(browser) -> pyotp.TOTP:
    """alice with an authenticator app (so her sign-ins ask for a code); signed out again."""
    r = local_sign_in(browser, "alice", "/account/security/totp")
    secret, _, _ = enrol_totp(browser, r.text)
    browser.cookies.clear()
    return pyotp.TOTP(secret)


# -- the four ways a page's language is chosen ---------------------------------------------------
def test_ui_locales_zh_cn_carries_through_login_second_factor_and_consent(idp, browser):
    totp = enrolled(browser)
    _, r = authorize(browser, ui_locales="zh-CN")  # the browser asks for nothing
    assert r.status_code == 200 and chinese(r.text) and "用户名/学工号" in r.text and 'id="login-form"' in r.text
    r = submit(browser, r.text, "login-form", username="alice", password="correct horse battery staple")
    assert chinese(r.text) and 'id="mfa-form"' in r.text and "二次验证" in r.text
    r = submit(browser, r.text, "mfa-form", code=totp.at(time.time() + 30))
    assert chinese(r.text) and 'id="consent-form"' in r.text and "同意授权" in r.text and "拒绝" in r.text
    r = allow(browser, r.text)
    assert r.status_code == 303 and "code" in callback_params(r.headers["location"])


def test_the_switch_turns_the_pages_chinese_and_is_remembered(idp, browser):
    _, r = authorize(browser)
    assert english(r.text)
    r = browser.get(switch_link(r.text, "zh-CN"))
    assert r.status_code == 303 and "campusid_lang=zh-CN" in r.headers["set-cookie"]
    r = follow(browser, r)
    assert chinese(r.text) and 'id="login-form"' in r.text  # the same sign-in, in Chinese
    r = submit(browser, r.text, "login-form", username="alice", password="correct horse battery staple")
    assert chinese(r.text) and 'id="consent-form"' in r.text
    assert chinese(browser.get("/device").text)  # the cookie: every page of this browser from now on
    r = allow(browser, r.text)
    assert r.status_code == 303 and "code" in callback_params(r.headers["location"])


def test_accept_language_chinese_gives_the_chinese_pages(idp):
    with idp.client(headers={"Accept-Language": CHINESE}) as browser:
        _, r = authorize(browser)
        assert chinese(r.text) and "密码" in r.text
        r = submit(browser, r.text, "login-form", username="alice", password="correct horse battery staple")
        assert chinese(r.text) and "是否授权" in r.text
        r = allow(browser, r.text)
        assert r.status_code == 303 and "code" in callback_params(r.headers["location"])


def test_ui_locales_en_wins_over_a_chinese_browser(idp):
    with idp.client(headers={"Accept-Language": CHINESE}) as browser:
        _, r = authorize(browser, ui_locales="en")
        assert english(r.text) and "Username" in r.text
        r = submit(browser, r.text, "login-form", username="alice", password="correct horse battery staple")
        assert english(r.text) and 'id="consent-form"' in r.text and ">Allow<" in r.text
        assert chinese(browser.get("/device").text)  # the app's wish was for its own sign-in only


def test_the_persons_switch_wins_over_the_apps_ui_locales(idp, browser):
    _, r = authorize(browser, ui_locales="en")
    r = follow(browser, browser.get(switch_link(r.text, "zh-CN")))
    assert chinese(r.text)
    r = submit(browser, r.text, "login-form", username="alice", password="correct horse battery staple")
    assert chinese(r.text) and 'id="consent-form"' in r.text


def test_ui_locales_takes_the_first_language_offered(idp, browser):
    _, r = authorize(browser, ui_locales="fr-CA de zh-Hans en")
    assert chinese(r.text)
    _, r = authorize(browser, ui_locales="zh-TW")  # Traditional Chinese is not offered: the default
    assert english(r.text)


def test_english_is_the_default(idp, browser):
    assert english(browser.get("/").text)
    assert english(browser.get("/", headers={"Accept-Language": "fr-FR, de;q=0.8"}).text)


def test_an_error_page_before_any_sign_in_speaks_the_requests_ui_locales(idp, browser):
    r = browser.get("/oauth/authorize?" + urlencode({"client_id": "nobody", "ui_locales": "zh-CN"}))
    assert r.status_code == 400 and chinese(r.text) and "将您转到此处的应用尚未注册" in r.text


def test_discovery_lists_the_languages(idp, browser):
    assert browser.get("/.well-known/openid-configuration").json()["ui_locales_supported"] == ["en", "zh-CN"]


# -- every page says its language -------------------------------------------------------------
@pytest.mark.parametrize(
    "path",
    ["/", "/device", "/logout", "/no-such-page", "/oauth/authorize?client_id=nobody", "/language?lang=xx"],
)
def test_every_page_says_its_language(idp, browser, path):
    r = follow(browser, browser.get(path, headers={"Accept-Language": CHINESE}))
    assert chinese(r.text), r.text[:300]
    assert 'hreflang="en"' in r.text and 'aria-current="true">简体中文' in r.text
    r = follow(browser, browser.get(path, headers={"Accept-Language": "en"}))
    assert english(r.text)


def test_signed_in_pages_and_consoles_say_their_language(idp, browser):
    local_sign_in(browser, "admin", "/account")
    for path in ("/account", "/developer", "/admin"):
        r = follow(browser, browser.get(path, headers={"Accept-Language": CHINESE}))
        assert chinese(r.text), path


# -- the switch refuses what it cannot use ------------------------------------------------------
def test_the_switch_returns_only_to_a_page_of_this_server(idp, browser):
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"):
        r = browser.get("/language?" + urlencode({"lang": "zh-CN", "next": target}))
        assert r.status_code == 303 and r.headers["location"] == "/", target
    r = browser.get("/language?" + urlencode({"lang": "en", "next": "/account?x=1"}))
    assert r.headers["location"] == "/account?x=1" and "campusid_lang=en" in r.headers["set-cookie"]


@pytest.mark.parametrize(
    "query",
    ["lang=fr", "lang=", "", "lang=zh-CN&lang=en", "lang=%ff", "lang=" + "x" * 5000, "lang=zh-CN&interaction=%00"],
)
def test_the_switch_answers_bad_input_with_a_page(idp, browser, query):
    r = browser.get("/language?" + query)
    assert r.status_code in (303, 400) and "Traceback" not in r.text
    if r.status_code == 400:
        assert "<html lang=" in r.text and "set-cookie" not in r.headers


def test_the_switch_with_a_sign_in_of_another_browser_changes_nothing(idp, browser):
    _, r = authorize(browser)
    link = switch_link(r.text, "zh-CN")
    with idp.client() as other:
        assert other.get(link).status_code == 400  # the handle alone is nothing without the binder
    r = follow(browser, browser.get(link.replace("lang=zh-CN", "lang=en")))
    assert english(r.text) and 'id="login-form"' in r.text


def test_a_cookie_we_did_not_set_is_ignored(idp, browser):
    browser.cookies.set("campusid_lang", "klingon")
    assert chinese(browser.get("/", headers={"Accept-Language": CHINESE}).text)
    browser.cookies.set("campusid_lang", "x" * 100)
    assert english(browser.get("/").text)


def test_a_hostile_accept_language_gets_a_page(idp, browser):
    for header in ("zh;q=abc, en", ";;;", "*", "zh-CN;q=0", "x" * 5000, ",".join(["zh"] * 500)):
        r = browser.get("/", headers={"Accept-Language": header})
        assert r.status_code == 200 and "<html lang=" in r.text, header


def test_the_switch_is_left_out_where_a_secret_is_shown_once(idp, browser):
    r = local_sign_in(browser, "alice", "/account/security/totp")
    assert 'hreflang="zh-CN"' in r.text
    _, _, done = enrol_totp(browser, r.text)
    assert 'class="recovery-code"' in done.text and "hreflang" not in done.text


def test_the_page_of_a_pending_sign_in_links_the_switch_to_it(idp, browser):
    r = follow(browser, browser.get("/login?next=/account"))
    link = urlsplit(switch_link(r.text, "zh-CN"))
    assert link.path == "/language" and "interaction=" in link.query and "next=" not in link.query
    r = post_login(browser, "alice")
    assert r.status_code == 303


def test_a_passkey_refusal_tells_the_page_in_its_language(idp, browser):
    """The passkey script shows `message`, in the page's language; `error_description` stays the
    protocol's ASCII (RFC 6749 5.2)."""
    r = browser.post("/passkey/options", data={"mode": "signin"}, headers={"Accept-Language": CHINESE})
    body = r.json()
    assert r.status_code == 404 and body["message"] == "只有通过域名访问本服务时才能使用通行密钥。"
    assert body["error_description"] == "Passkeys need the service to be reached by a host name."


def test_a_refused_form_leads_the_switch_back_to_its_page(idp, browser):
    r = browser.post("/device", data={"user_code": "x"})  # no CSRF token: the form again, refused
    assert r.status_code == 403 and 'id="device-form"' in r.text
    assert urlsplit(switch_link(r.text, "zh-CN")).query.endswith("next=%2Fdevice")
    r = browser.get("/logout?" + urlencode({"client_id": "web-app", "ui_locales": "zh-CN"}))
    assert chinese(r.text)
    link = switch_link(r.text, "en")  # a GET page: back to the same request, now asking for English
    assert "ui_locales%3Den" in link and "client_id%3Dweb-app" in link
    assert english(follow(browser, browser.get(link)).text)
