"""The gettext catalogues and a Translator per language.

Catalogues live beside this module, `locale/<name>/LC_MESSAGES/campusid.po` (the source a
translator edits) and `campusid.mo` (compiled by scripts/i18n.py, shipped in the wheel). A language
is offered when its compiled catalogue is there: a third one is a new directory, nothing else.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from babel import Locale
from babel.dates import format_skeleton, format_time
from babel.support import NullTranslations, Translations

from campusid.i18n.messages import Message

DOMAIN = "campusid"
LOCALE_DIR = Path(__file__).parent / "locale"
DEFAULT_LOCALE = "en"


@functools.cache
def locales() -> tuple[str, ...]:
    """The catalogue names we speak (gettext's, `zh_CN`), the default first, then by name."""
    found = sorted(p.parent.parent.name for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.mo"))
    return (DEFAULT_LOCALE, *(name for name in found if name != DEFAULT_LOCALE))


def tag_of(locale: str) -> str:
    """The BCP 47 tag of a catalogue (RFC 5646: `zh-CN`), for `<html lang>` and `ui_locales_supported`."""
    return locale.replace("_", "-")


def locale_of_tag(tag: str | None) -> str | None:
    """The catalogue whose tag is exactly `tag` (case-insensitive), or None."""
    wanted = (tag or "").lower()
    return next((name for name in locales() if tag_of(name).lower() == wanted), None)


@functools.cache
def _catalogue(locale: str) -> NullTranslations:
    return Translations.load(str(LOCALE_DIR), [locale], DOMAIN)


class Translator:
    """One language's text: `_` / `gettext`, `ngettext` (plural forms), `text` (a Message or a
    plain str as it is), and dates and times as that language writes them (Babel, CLDR)."""

    def __init__(self, locale: str) -> None:
        self.locale = locale if locale in locales() else DEFAULT_LOCALE
        self.tag = tag_of(self.locale)
        self.catalogue = _catalogue(self.locale)
        self._babel = Locale.parse(self.locale)

    def gettext(self, message: str, /, **values: Any) -> str:
        text = self.catalogue.gettext(message)
        return text % values if values else text

    _ = gettext

    def ngettext(self, singular: str, plural: str, n: int, /, **values: Any) -> str:
        text = self.catalogue.ngettext(singular, plural, n)
        return text % values if values else text

    def pgettext(self, context: str, message: str) -> str:
        return self.catalogue.pgettext(context, message)

    def text(self, value: Any) -> Any:
        """A Message in this language; anything else as it is."""
        if isinstance(value, Message):
            return value.translated(self.catalogue.gettext, self.catalogue.ngettext)
        return value

    @property
    def language_name(self) -> str:
        """This language in itself ("简体中文"), as a language switch lists it."""
        return self.pgettext("language name", "English")

    def moment(self, when: datetime) -> str:
        """An aware datetime, in its own time zone, as this language writes a date and a time of
        day: "Dec 6, 2026, 2:18 PM", "2026年12月6日 14:18"."""
        zone = when.tzinfo
        date = format_skeleton("yMMMd", when, tzinfo=zone, locale=self._babel)
        time = format_time(when, "short", tzinfo=zone, locale=self._babel)
        return str(self._babel.datetime_formats["medium"]).format(time, date)

    def datetime(self, ts: int | float | None, empty: str = "—") -> str:
        """A moment (Unix time) in UTC, which the pages say: "Dec 6, 2026, 2:18 PM UTC"."""
        if not ts:
            return empty
        return self.moment(datetime.fromtimestamp(ts, UTC)) + " UTC"


@functools.cache
def translator(locale: str) -> Translator:
    """The Translator of a catalogue (the default language's for one we do not have)."""
    return Translator(locale)
