"""Which catalogue a reader gets (campusid/i18n/negotiation.py): tags read with Babel and CLDR's
likely subtags, the first one we speak wins; anything unreadable is no wish, never an error."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from campusid import i18n


def test_we_speak_english_and_simplified_chinese() -> None:
    assert i18n.locales() == ("en", "zh_CN")
    assert [i18n.tag_of(name) for name in i18n.locales()] == ["en", "zh-CN"]
    assert i18n.locale_of_tag("ZH-cn") == "zh_CN" and i18n.locale_of_tag("zh") is None


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        ("zh-CN,zh;q=0.9,en;q=0.5", "zh_CN"),
        ("zh", "zh_CN"),
        ("zh-Hans", "zh_CN"),
        ("zh-Hans-CN", "zh_CN"),
        ("zh-SG", "zh_CN"),  # Singapore writes Simplified Chinese
        ("zh-TW", None),  # Traditional Chinese: not offered
        ("zh-HK, en;q=0.3", "en"),
        ("en-GB", "en"),
        ("fr, en;q=0.8", "en"),
        ("en;q=0.5, zh;q=0.9", "zh_CN"),  # weights, not order
        ("zh-CN;q=0, en", "en"),  # q=0: not acceptable
        ("de", None),
        ("*", None),
        ("zh;q=abc, en", "en"),  # a malformed weight drops its tag
        ("", None),
    ],
)
def test_accept_language(header: str, chosen: str | None) -> None:
    assert i18n.accept_language(header) == chosen


@pytest.mark.parametrize(
    ("value", "chosen"),
    [("zh-CN en", "zh_CN"), ("en zh-CN", "en"), ("fr-CA zh", "zh_CN"), ("tlh", None), ("", None), (None, None)],
)
def test_ui_locales_in_order_of_preference(value: str | None, chosen: str | None) -> None:
    assert i18n.ui_locales(value) == chosen


@pytest.mark.parametrize(
    ("name", "chosen"),
    [("zh_CN.UTF-8", "zh_CN"), ("zh_TW", None), ("en_US@euro", "en"), ("C.UTF-8", None), ("POSIX", None)],
)
def test_system_locale_names(name: str, chosen: str | None) -> None:
    assert i18n.system_locale(name) == chosen


@given(st.text(max_size=300))
def test_any_header_is_an_answer_never_an_error(header: str) -> None:
    assert i18n.accept_language(header) in (None, "en", "zh_CN")
    assert i18n.ui_locales(header) in (None, "en", "zh_CN")
