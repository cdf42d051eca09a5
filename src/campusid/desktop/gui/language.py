"""The window's language: the campusid catalogue (campusid.i18n) the system locale prefers.

``LC_ALL``, ``LC_MESSAGES`` and ``LANG`` (in POSIX order of precedence) override the system locale
(Qt's ``QLocale.system().name()``), so a test or a person can pick the language. No Qt needed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from campusid import i18n


def interface_language(system_locale: str, environ: Mapping[str, str] | None = None) -> str:
    """The catalogue for the window: the first of LC_ALL, LC_MESSAGES, LANG that is set (and not
    C or POSIX) decides, else `system_locale`; English when we have no catalogue it can read."""
    env = os.environ if environ is None else environ
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(var, "")
        if value and value not in ("C", "POSIX") and not value.startswith(("C.", "POSIX.")):
            return i18n.system_locale(value) or i18n.DEFAULT_LOCALE
    return i18n.system_locale(system_locale) or i18n.DEFAULT_LOCALE
