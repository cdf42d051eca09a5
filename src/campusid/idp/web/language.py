"""Which language a page speaks, and the switch every page carries.

In order (docs/configuration.md, "Languages"):
  1. what the sign-in being served asked: the app's OIDC `ui_locales` (OpenID Connect Core 1.0
     3.1.2.1; RP-Initiated Logout 1.0 2 for the end_session endpoint), or a language the person chose
     on a page of this sign-in, which the pending sign-in keeps (signin/pending.py);
  2. the language switch, remembered by a cookie (no account needed);
  3. the browser's Accept-Language (RFC 9110 12.5.4), negotiated with Babel (campusid.i18n);
  4. English.
The switch is a plain link to `/language` (pages/language.py): it works without JavaScript.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import Response

from campusid import i18n
from campusid.idp.context import Context
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.web import cookies
from campusid.idp.web.browser import HANDLE, cookie_name

COOKIE = "campusid_lang"
REMEMBERED = 365 * 86400  # a person's language is theirs for long
SWITCH = "/language"


def chosen(ctx: Context, request: Request, asked: str | None = None) -> str:
    """The catalogue a page speaks: `asked` (the sign-in's own), the cookie, Accept-Language, English."""
    if asked is not None and asked in i18n.locales():
        return asked
    remembered = request.cookies.get(cookie_name(ctx, COOKIE))
    by_cookie = i18n.locale_of_tag(remembered) if remembered and len(remembered) <= 35 else None
    return by_cookie or i18n.accept_language(request.headers.get("accept-language")) or i18n.DEFAULT_LOCALE


def remember(ctx: Context, response: Response, locale: str) -> None:
    """The switch's cookie on `response`: `locale` on every page of this browser from now on."""
    cookies.set_cookie(
        response, cookie_name(ctx, COOKIE), i18n.tag_of(locale), REMEMBERED, secure=ctx.settings.secure_cookies
    )


# The parameters by which a page's own request asks for a language: OIDC's, and Apereo CAS's
# `locale` (/cas/login, /cas/logout).
ASKING = ("ui_locales", "locale")


def _asking(back: str, tag: str) -> str:
    """`back` asking for `tag`: a page whose own request names a language (the end_session
    endpoint, an authorization request refused before its sign-in began, a CAS page with `locale`)
    would otherwise ask for the app's language again, above the person's choice."""
    parts = urlsplit(back)
    if not any(f"{name}=" in parts.query for name in ASKING):
        return back
    query = [(k, tag if k in ASKING else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def switch(ctx: Context, locale: str, *, at: PendingSignIn | None = None, back: str | None = None) -> list[dict]:
    """The switch's links, one per language, each named in its own language: to the same page of the
    pending sign-in `at` (its handle), or back to `back` (a path on this server), else home."""
    links = []
    for name in i18n.locales():
        tag = i18n.tag_of(name)
        target = {HANDLE: at.handle} if at is not None else {"next": _asking(back or ctx.path("/"), tag)}
        links.append(
            {
                "tag": tag,
                "name": i18n.translator(name).language_name,
                "href": ctx.path(SWITCH) + "?" + urlencode({"lang": tag, **target}),
                "current": name == locale,
            }
        )
    return links
