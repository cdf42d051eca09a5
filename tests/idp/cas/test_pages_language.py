"""The CAS face's pages in the reader's language (idp/web/language.py): the refused-service page,
the login form, the signed-in page, the 429 page and the /cas/logout pages speak Chinese to a
Chinese browser or when Apereo's `locale` parameter asks for it, English when `locale=en` asks
under a Chinese Accept-Language; the reason a service is refused is translated inside its sentence;
the language switch of a page whose request named `locale` leads back asking for the new language.
The protocol's answers (XML, JSON) stay as the protocol writes them."""

from __future__ import annotations

from tests.idp.cas.helpers import SERVICE, cas_app, login_url, service_ticket, sign_in, success, ticket_of, validate
from tests.idp.web.test_language import CHINESE, chinese, english, switch_link


def test_a_refused_service_is_explained_in_chinese(idp, browser, portal):
    r = browser.get(login_url("https://portal.example.edu/portal#x"), headers={"Accept-Language": CHINESE})
    assert r.status_code == 400 and chinese(r.text)
    assert "此应用无法使用统一身份认证登录" in r.text
    assert "应用发送的地址（service）包含片段（#…）。" in r.text  # the rule's reason, translated in its sentence
    r = browser.get(login_url("https://other.example.edu/"), headers={"Accept-Language": CHINESE})
    assert r.status_code == 400 and "未在本系统任何应用中登记" in r.text


def test_the_same_refusal_in_english(idp, browser, portal):
    r = browser.get(login_url("https://portal.example.edu/portal#x"))
    assert r.status_code == 400 and english(r.text)
    assert "The address the application sent (service) has a fragment (#…)." in r.text


def test_an_unreadable_request_is_explained_in_chinese(idp, browser, portal):
    r = browser.get("/cas/login?service=a&service=b", headers={"Accept-Language": CHINESE})
    assert r.status_code == 400 and chinese(r.text) and "无法读取登录请求" in r.text


def test_the_locale_parameter_carries_through_the_sign_in(idp, browser, portal):
    r = browser.get(login_url(locale="zh_CN"))
    assert r.status_code == 200 and 'id="login-form"' in r.text and chinese(r.text)
    r = sign_in(browser, locale="zh-CN")
    assert r.status_code == 303 and success(validate(browser, ticket_of(r.headers["location"])).text)[0] == "alice"


def test_locale_en_wins_over_a_chinese_browser(idp, browser, portal):
    r = browser.get(login_url(locale="en"), headers={"Accept-Language": CHINESE})
    assert r.status_code == 200 and english(r.text)


def test_the_switch_of_a_refused_page_asks_for_the_new_language(idp, browser, portal):
    r = browser.get(login_url("https://other.example.edu/", locale="zh_CN"))
    assert chinese(r.text)
    r = browser.get(switch_link(r.text, "en"))
    assert r.status_code in (302, 303) and "locale=en" in r.headers["location"]
    assert english(browser.get(r.headers["location"]).text)


def test_the_signed_in_page_in_chinese(idp, browser, portal):
    service_ticket(browser)
    r = browser.get("/cas/login", headers={"Accept-Language": CHINESE})
    assert r.status_code == 200 and chinese(r.text) and "Alice Zhang" in r.text


def test_the_429_page_in_chinese(idp_env):
    from tests.idp.conftest import ISSUER, IdP

    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "1/hour"})
    try:
        cas_app(idp)
        with idp.client() as browser:
            service_ticket(browser)
            r = browser.get(login_url(), headers={"Accept-Language": CHINESE})
            assert r.status_code == 429 and chinese(r.text)
            assert "登录过于频繁" in r.text and "您在短时间内登录此应用的次数过多，请等待约 60 分钟后重试。" in r.text
            r = browser.get(login_url())
            assert "Please wait about 60 minutes and try again." in r.text
    finally:
        idp.store.close()


def test_cas_logout_pages_in_chinese(idp, browser, portal):
    service_ticket(browser)
    r = browser.get(
        "/cas/logout", params={"service": "https://evil.example.edu/"}, headers={"Accept-Language": CHINESE}
    )
    assert r.status_code == 400 and "location" not in r.headers and chinese(r.text)
    assert "您已退出登录。系统没有将您转到应用要求返回的地址：该地址未在本系统任何应用中登记。" in r.text
    r = browser.get("/cas/logout", params={"service": "javascript:alert(1)", "locale": "zh_CN"})
    assert r.status_code == 400 and "该地址不是绝对的 http(s) URL。" in r.text
    r = browser.get("/cas/logout", params={"locale": "zh_CN"})
    assert r.status_code == 200 and chinese(r.text) and "您已退出登录" in r.text


def test_the_protocol_answers_stay_untranslated(idp, browser, portal):
    ticket = service_ticket(browser)
    query = {"service": SERVICE + "x", "ticket": ticket}
    r = browser.get("/cas/p3/serviceValidate", params=query, headers={"Accept-Language": CHINESE})
    assert "INVALID_SERVICE" in r.text and not any("\u4e00" <= ch <= "\u9fff" for ch in r.text)
