"""Pages: a template rendered in the reader's language (web/language.py) under the university's
brand, with the security headers every page sends (web/http.py PAGE_HEADERS), and the error page,
one of the three places where a refused request (idp/errors.py) becomes an answer.

A handler passes what it words for people as marked Messages (campusid.i18n.N_); the template
prints them in the page's language. `at`, a page of a pending sign-in: its language (what the app
asked or the person chose) and the switch's way back to it. `asked`: a language the request itself
asked for (an authorization request's ui_locales before there is a pending sign-in).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from campusid.i18n import N_
from campusid.idp.context import Context
from campusid.idp.errors import RequestError
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.web import language
from campusid.idp.web.http import PAGE_HEADERS, Handler, return_to

REQUEST_UNUSABLE = N_("This sign-in request cannot be used")
# What many pages say about a form they cannot take.
FORM_EXPIRED = N_(
    "The form expired or was not sent from this site. Nothing was changed; reload the page and try again."
)
UNREADABLE = N_("The form could not be read.")


def _back(ctx: Context, request: Request, after_post: str | None) -> str:
    """Where the language switch of a page returns: the page itself when a GET shows it again, else
    `after_post` (the page a form's answer belongs to), else home."""
    if request.method in ("GET", "HEAD"):
        return return_to(request, ctx.path("/"))
    return after_post or ctx.path("/")


def page(
    ctx: Context,
    request: Request,
    template: str,
    status: int = 200,
    headers: dict | None = None,
    *,
    at: PendingSignIn | None = None,
    asked: str | None = None,
    after_post: str | None = None,
    switch: bool = True,
    **values,
) -> HTMLResponse:
    """`template` in the page's language. The language switch leads back to the pending sign-in `at`,
    or to this page (`after_post`: where, when it answers a form). `switch=False` leaves the switch
    out: a page that shows something once (recovery codes, a client secret) would lose it if left."""
    locale = language.chosen(ctx, request, at.locale if at is not None and at.locale else asked)
    languages = []
    if switch:
        back = None if at is not None else _back(ctx, request, after_post)
        languages = language.switch(ctx, locale, at=at, back=back)
    html = ctx.templates.get_template(template, locale).render(
        issuer_display=ctx.settings.issuer.display,
        static=ctx.path("/static"),
        path=ctx.path,
        languages=languages,
        **values,
    )
    out = dict(PAGE_HEADERS)
    if headers:
        out.update(headers)
    return HTMLResponse(html, status_code=status, headers=out)


def error_page(
    ctx: Context,
    request: Request,
    message: str,
    status: int = 400,
    title: str = REQUEST_UNUSABLE,
    *,
    at: PendingSignIn | None = None,
    asked: str | None = None,
) -> HTMLResponse:
    return page(ctx, request, "error.html", status=status, at=at, asked=asked, title=title, message=message)


def page_error(
    ctx: Context, request: Request, exc: RequestError, title: str = N_("This request cannot be used")
) -> HTMLResponse:
    """The HTML answer to a refused request: the error page with its description, its status and
    the headers it carries (Retry-After)."""
    response = error_page(ctx, request, exc.message or N_("The request could not be read."), exc.status, title)
    response.headers.update(exc.headers)
    return response


def page_endpoint(handler: Handler | None = None, *, render: Callable[[Request, RequestError], Response] | None = None):
    """An HTML endpoint: a RequestError its handler raises is answered by `page_error`, or by
    `render` (a page that shows its own form again with the message). Bare or with options."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestError as exc:
                if render is not None:
                    return render(request, exc)
                return page_error(request.app.state.ctx, request, exc)

        return endpoint

    return wrap(handler) if handler is not None else wrap
