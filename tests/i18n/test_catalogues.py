"""The catalogues and their translators (campusid/i18n): marked messages in each language, plural
forms, dates and times as each language writes them, and the compiled catalogues that ship."""

from __future__ import annotations

import pickle
from datetime import datetime, timedelta, timezone

from campusid import i18n
from campusid.i18n import N_, Message, N_plural, translator


def test_a_marked_message_is_english_text_everywhere_but_a_page() -> None:
    message = N_("The new password must be %(min)s to %(max)s characters.", min=10, max=1024)
    assert isinstance(message, str) and message == "The new password must be 10 to 1024 characters."
    assert translator("zh_CN").text(message) == "新密码长度须为 10 到 1024 个字符。"
    assert translator("en").text(message) == message
    assert translator("zh_CN").text("not marked") == "not marked"


def test_a_message_inside_a_message_is_translated_too() -> None:
    wait = N_plural("%(count)s minute", "%(count)s minutes", 15, count=15)
    message = N_("Too many sign-in attempts. For your security, please wait %(wait)s and try again.", wait=wait)
    assert "wait 15 minutes and" in message
    assert translator("zh_CN").text(message) == "登录尝试过于频繁。为保障账号安全，请等待 15 分钟后重试。"


def test_plural_forms_follow_each_language() -> None:
    one = N_plural("%(count)s minute", "%(count)s minutes", 1, count=1)
    many = N_plural("%(count)s minute", "%(count)s minutes", 2, count=2)
    assert (one, many) == ("1 minute", "2 minutes")
    zh = translator("zh_CN")
    assert (zh.text(one), zh.text(many)) == ("1 分钟", "2 分钟")  # Chinese has one form
    en = translator("en")
    assert en.ngettext("%(count)s passkey", "%(count)s passkeys", 1, count=1) == "1 passkey"


def test_a_message_survives_pickling_with_what_translates_it() -> None:
    message = pickle.loads(pickle.dumps(N_("Sign-in expired")))
    assert isinstance(message, Message) and translator("zh_CN").text(message) == "登录已过期"


def test_each_language_names_itself() -> None:
    assert [translator(name).language_name for name in i18n.locales()] == ["English", "简体中文"]


def test_dates_and_times_as_each_language_writes_them() -> None:
    moment = 1_800_000_000  # 2027-01-15T08:00:00Z
    assert translator("zh_CN").datetime(moment) == "2027年1月15日 08:00 UTC"
    assert translator("en").datetime(moment).replace("\u202f", " ") == "Jan 15, 2027, 8:00 AM UTC"
    assert translator("en").datetime(None) == "—"
    beijing = datetime(2027, 1, 15, 16, 0, tzinfo=timezone(timedelta(hours=8)))
    assert translator("zh_CN").moment(beijing) == "2027年1月15日 16:00"


def test_a_language_we_do_not_have_is_english() -> None:
    assert translator("fr").locale == "en" and translator("fr")._("Sign in") == "Sign in"


def test_the_compiled_catalogues_are_in_the_package() -> None:
    for name in i18n.locales():
        assert (i18n.LOCALE_DIR / name / "LC_MESSAGES" / f"{i18n.DOMAIN}.mo").is_file()
    assert len(translator("zh_CN").catalogue._catalog) > 400
