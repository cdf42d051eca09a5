"""Which of our catalogues a reader gets, from the language tags they or their software name.

Tags are read with Babel (`Locale.parse`: BCP 47, RFC 5646) and completed with CLDR's likely
subtags, so `zh`, `zh-CN`, `zh-Hans` and `zh-SG` all mean Simplified Chinese and `zh-TW` or
`zh-Hant` do not (Traditional Chinese is another catalogue, which we do not have). Babel's
`negotiate_locale` then picks the first wanted language we have. A tag Babel cannot read counts as
no wish at all, never as an error: these values come from browsers and apps.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from babel import Locale
from babel.core import UnknownLocaleError, get_global, negotiate_locale

MAX_TAGS = 20  # of one header or parameter: more is not a person's list of languages
MAX_TAG = 35  # RFC 5646 4.4.1 asks implementations to handle at least 35 characters


def language_key(locale: Locale) -> str:
    """`language_Script`, the script from CLDR's likely subtags when the tag names none: what
    decides whether a reader can read a catalogue (zh-CN and zh-Hans alike: `zh_Hans`)."""
    script = locale.script
    if script is None:
        likely = get_global("likely_subtags")
        for guess in (f"{locale.language}_{locale.territory}", locale.language):
            if guess in likely:
                script = Locale.parse(likely[guess]).script
                break
    return f"{locale.language}_{script}" if script else locale.language


def _parse(tag: str, sep: str) -> Locale | None:
    tag = tag.strip()
    if not tag or len(tag) > MAX_TAG or tag == "*":
        return None
    try:
        return Locale.parse(tag, sep=sep)
    except (ValueError, TypeError, UnknownLocaleError):
        return None


def negotiate(wanted: Iterable[str], available: Iterable[str], sep: str = "-") -> str | None:
    """The first of `available` (catalogue names such as `zh_CN`) that a tag of `wanted` (in order
    of preference, separated by `sep`) can read; None when none can."""
    by_key: dict[str, str] = {}
    for name in available:
        locale = _parse(name, "_")
        if locale is not None:
            by_key.setdefault(language_key(locale), name)
    keys = [language_key(locale) for tag in list(wanted)[:MAX_TAGS] if (locale := _parse(tag, sep)) is not None]
    chosen = negotiate_locale(keys, list(by_key), sep="_")
    return by_key.get(chosen) if chosen else None


@functools.lru_cache(maxsize=512)
def _ranked(header: str) -> tuple[str, ...]:
    """The tags of an Accept-Language value (RFC 9110 12.5.4) by weight, the header's order among
    equal weights; q=0 (not acceptable) and malformed weights are dropped."""
    ranked: list[tuple[float, int, str]] = []
    for index, item in enumerate(header.split(",")[:MAX_TAGS]):
        tag, _, params = item.partition(";")
        weight = 1.0
        name, _, value = params.strip().partition("=")
        if name.strip().lower() == "q":
            try:
                weight = float(value)
            except ValueError:
                continue
        if 0 < weight <= 1 and tag.strip():
            ranked.append((-weight, index, tag.strip()))
    return tuple(tag for _, _, tag in sorted(ranked))


def accept_language(header: str | None, available: Iterable[str]) -> str | None:
    """The catalogue an Accept-Language header prefers, or None (then the default applies)."""
    if not header or len(header) > 1024:
        return None
    return negotiate(_ranked(header), tuple(available))


def ui_locales(value: str | None, available: Iterable[str]) -> str | None:
    """The catalogue the OIDC `ui_locales` parameter prefers (OpenID Connect Core 1.0 3.1.2.1:
    space-separated BCP 47 tags, most preferred first), or None."""
    if not value or len(value) > 512:
        return None
    return negotiate(value.split(), tuple(available))


def system_locale(name: str, available: Iterable[str]) -> str | None:
    """The catalogue a POSIX locale name (`zh_CN.UTF-8`, `en_GB@euro`) or Qt's `QLocale.name()`
    prefers, or None (`C` and `POSIX` prefer nothing)."""
    base = name.split(".", 1)[0].split("@", 1)[0].strip()
    if base in ("", "C", "POSIX"):
        return None
    return negotiate([base.replace("_", "-")], tuple(available))
