"""Text marked for translation where it is written and translated where it is shown.

A handler, a rule or a service that words a message for people marks it with `N_` (or `N_plural`
where a count appears): the result is a `Message`, a `str` holding the English text with its values
filled in, so a log line, the CLI, the management API and a test read it as they always did, while
a page (its template's output, idp/templates.py) or the desktop window shows the same message in its
reader's language. Babel finds the marked text by these names (scripts/i18n.py extracts it).

The text is a gettext msgid with `%(name)s` placeholders (Python's printf-style formatting, which
Babel flags `python-format`), as Jinja2's `{% trans %}` writes them, so one catalogue serves both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Message(str):
    """English text (`str(message)`), with what a translator needs to say it in another language:
    the msgid (and plural msgid and count) and the values that fill its placeholders. A value that
    is itself a Message is translated too."""

    msgid: str
    plural: str | None
    n: int | None
    values: dict[str, Any]

    def __new__(cls, msgid: str, values: dict[str, Any], plural: str | None = None, n: int | None = None) -> Message:
        english = plural if plural is not None and n != 1 else msgid
        text = english % values if values else english
        self = super().__new__(cls, text)
        self.msgid, self.plural, self.n, self.values = msgid, plural, n, values
        return self

    def translated(self, gettext: Callable[[str], str], ngettext: Callable[[str, str, int], str]) -> str:
        """This message in the language of `gettext` and `ngettext` (one catalogue's functions)."""
        text = gettext(self.msgid) if self.plural is None else ngettext(self.msgid, self.plural, self.n)
        if not self.values:
            return text
        return text % {
            name: value.translated(gettext, ngettext) if isinstance(value, Message) else value
            for name, value in self.values.items()
        }

    def __reduce__(self):  # a str subclass with attributes: pickled with them
        return (Message, (self.msgid, self.values, self.plural, self.n))


def N_(msgid: str, /, **values: Any) -> Message:  # noqa: N802 - the gettext convention Babel looks for
    """`msgid` marked for translation, its `%(name)s` placeholders filled from `values`."""
    return Message(msgid, values)


def N_plural(singular: str, plural: str, n: int, /, **values: Any) -> Message:  # noqa: N802
    """A message whose wording depends on the count `n` (gettext plural forms: Chinese has one,
    English two); `values` fill the placeholders, `n` included if it is shown."""
    return Message(singular, values, plural, n)
