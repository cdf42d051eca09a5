"""The university's face (idp/brand.py, web/brand.py): its name per language, its logo and colour on
every page a person sees, set by CAMPUSID_BRAND_*, with a tested default; served by the IdP itself,
so the pages' CSP is unchanged; the issuer stays in the header and the product is a footnote."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from campusid.idp.brand import DEFAULT_COLOR, MAX_LOGO
from campusid.idp.settings import SettingsError, load_settings
from tests.idp.conftest import ISSUER, IdP
from tests.idp.helpers import PASSWORD, follow
from tests.idp.mfa_helpers import local_sign_in
from tests.portal.helpers import XSS

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
CHINESE = {"Accept-Language": "zh-CN"}


def header(page: str) -> str:
    match = re.search(r'<header class="topbar">(.*?)</header>', page, re.S)
    assert match, page[:300]
    return match.group(1)


@pytest.fixture
def branded(idp_env, tmp_path: Path) -> IdP:
    logo = tmp_path / "logo.png"
    logo.write_bytes(PNG)
    env = {
        **idp_env,
        "CAMPUSID_ISSUER": ISSUER,
        "CAMPUSID_BRAND_NAME": "Example University",
        "CAMPUSID_BRAND_NAME_ZH_CN": "示例大学",
        "CAMPUSID_BRAND_LOGO": str(logo),
        "CAMPUSID_BRAND_COLOR": "#8A1538",
    }
    instance = IdP(env)
    yield instance
    instance.store.close()


def test_the_default_face_is_the_service_itself(idp, browser):
    page = browser.get("/login?next=/", follow_redirects=True).text
    top = header(page)
    assert "Sign-in service" in top and "brand-name" not in top and "<img" not in top
    assert "<title>Sign in · Sign-in service</title>" in page
    assert "统一身份认证" in header(browser.get("/", headers=CHINESE).text)
    css = browser.get("/brand/style.css")
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert css.text.strip() == f":root {{ --brand:{DEFAULT_COLOR}; }}"
    assert browser.get("/brand/logo").status_code == 404


def test_the_issuer_stays_in_the_header_and_the_product_is_a_footnote(idp, browser):
    page = browser.get("/").text
    assert f'<span class="issuer" title="Identity provider">{ISSUER}</span>' in header(page)
    assert "campusid" not in header(page)
    assert '<p class="product">Powered by campusid</p>' in page
    assert '<p class="product">技术支持：campusid</p>' in browser.get("/", headers=CHINESE).text


def test_the_name_logo_and_colour_on_every_page_a_person_sees(branded):
    with branded.client() as browser:
        pages = {
            "login": follow(browser, browser.get("/login?next=/account")).text,
            "error": browser.get("/oauth/authorize?client_id=nobody").text,
            "not found": browser.get("/no-such-page").text,
        }
        local_sign_in(browser, "admin", "/account")
        pages |= {name: browser.get(path).text for name, path in (("account", "/account"), ("portal", "/developer"))}
        pages["console"] = browser.get("/admin").text
        for name, page in pages.items():
            top = header(page)
            assert '<span class="brand-name">Example University</span>' in top, name
            assert '<img class="brand-logo" src="/brand/logo"' in top, name
            assert '<link rel="stylesheet" href="/brand/style.css">' in page, name
        zh = browser.get("/account", headers=CHINESE).text
        assert '<span class="brand-name">示例大学</span>' in header(zh) and "<title>个人中心 · 示例大学</title>" in zh
        assert browser.get("/brand/style.css").text.strip() == ":root { --brand:#8a1538; }"


def test_the_consent_page_carries_the_brand(branded):
    from urllib.parse import urlencode

    from tests.idp.conftest import WEB_REDIRECT
    from tests.idp.helpers import auth_params, form_fields

    with branded.client() as browser:
        flow = auth_params(branded.web_id, WEB_REDIRECT)
        r = browser.get(f"/oauth/authorize?{urlencode(flow.params)}")
        action, fields = form_fields(r.text, "login-form")
        r = follow(browser, browser.post(action, data={**fields, "username": "alice", "password": PASSWORD}))
        assert 'id="consent-form"' in r.text and "Example University" in header(r.text)


def test_the_logo_is_served_from_our_origin_and_the_pages_csp_is_unchanged(branded):
    with branded.client() as browser:
        logo = browser.get("/brand/logo")
        assert logo.status_code == 200 and logo.content == PNG and logo.headers["content-type"] == "image/png"
        assert logo.headers["x-content-type-options"] == "nosniff"
        page = browser.get("/")
        csp = page.headers["content-security-policy"]
        assert "img-src 'self' data:" in csp and "style-src 'self'" in csp and "http" not in csp
        assert " style=" not in page.text and "<style" not in page.text  # no inline style for the colour


def test_an_svg_logo_runs_no_script_even_opened_as_a_page(idp_env, tmp_path):
    logo = tmp_path / "logo.svg"
    logo.write_bytes(SVG)
    instance = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_BRAND_LOGO": str(logo)})
    try:
        with instance.client() as browser:
            r = browser.get("/brand/logo")
            assert r.headers["content-type"].startswith("image/svg+xml")
            assert (
                "default-src 'none'" in r.headers["content-security-policy"]
                and "sandbox" in r.headers["content-security-policy"]
            )
    finally:
        instance.store.close()


def test_a_name_is_shown_as_text(idp_env):
    instance = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER, "CAMPUSID_BRAND_NAME": XSS})
    try:
        with instance.client() as browser:
            assert XSS not in browser.get("/").text
    finally:
        instance.store.close()


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("CAMPUSID_BRAND_COLOR", "red", "CAMPUSID_BRAND_COLOR"),
        ("CAMPUSID_BRAND_COLOR", "#0b5cad; } body { display:none", "CAMPUSID_BRAND_COLOR"),
        ("CAMPUSID_BRAND_LOGO", "/nonexistent/logo.png", "cannot be read"),
        ("CAMPUSID_BRAND_LOGO", "/etc/passwd", "CAMPUSID_BRAND_LOGO must name"),
        ("CAMPUSID_BRAND_NAME", "x" * 101, "CAMPUSID_BRAND_NAME"),
        ("CAMPUSID_BRAND_NAME_ZH_CN", "a\nb", "CAMPUSID_BRAND_NAME_ZH_CN"),
    ],
)
def test_a_bad_brand_setting_stops_the_start_saying_which(idp_env, variable, value, says):
    with pytest.raises(SettingsError, match=says):
        load_settings({**idp_env, variable: value})


def test_a_logo_too_large_or_empty_is_refused(idp_env, tmp_path):
    for size in (0, MAX_LOGO + 1):
        logo = tmp_path / f"logo{size}.png"
        logo.write_bytes(b"x" * size)
        with pytest.raises(SettingsError, match="KiB"):
            load_settings({**idp_env, "CAMPUSID_BRAND_LOGO": str(logo)})
