"""User-facing text in the reader's language: gettext catalogues (Babel), one domain for the IdP's
pages, the desktop window and the example web client.

    translator("zh_CN")._("Sign in")        text now, in one language
    N_("Wait %(minutes)s minutes.", ...)    text marked where it is written, shown in the reader's
                                            language where it is shown (messages.py)
    accept_language(header), ui_locales(v)  which catalogue a reader gets (negotiation.py)
"""

from __future__ import annotations

from campusid.i18n import negotiation
from campusid.i18n.catalogues import (
    DEFAULT_LOCALE,
    DOMAIN,
    LOCALE_DIR,
    Translator,
    locale_of_tag,
    locales,
    tag_of,
    translator,
)
from campusid.i18n.messages import N_, Message, N_plural

__all__ = [
    "DEFAULT_LOCALE",
    "DOMAIN",
    "LOCALE_DIR",
    "Message",
    "N_",
    "N_plural",
    "Translator",
    "accept_language",
    "locale_of_tag",
    "locales",
    "system_locale",
    "tag_of",
    "translator",
    "ui_locales",
]


def accept_language(header: str | None) -> str | None:
    """The catalogue an Accept-Language header prefers among ours, or None."""
    return negotiation.accept_language(header, locales())


def ui_locales(value: str | None) -> str | None:
    """The catalogue an OIDC `ui_locales` value prefers among ours, or None."""
    return negotiation.ui_locales(value, locales())


def system_locale(name: str) -> str | None:
    """The catalogue a POSIX or Qt locale name prefers among ours, or None."""
    return negotiation.system_locale(name, locales())
