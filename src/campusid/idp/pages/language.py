"""The language switch (web/language.py): `GET /language?lang=zh-CN&next=/account` or, on a page
of a pending sign-in, `&interaction=<handle>`. The choice is remembered by a cookie for every page
of this browser, and a pending sign-in keeps it for the rest of its pages, above the language its
app asked for (the person's own choice comes last and wins). Then back to the page, by 303.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from campusid import i18n
from campusid.i18n import N_
from campusid.idp.context import Context
from campusid.idp.errors import RequestError
from campusid.idp.pages.login import expired, local_next, stage_page
from campusid.idp.web import language
from campusid.idp.web.browser import HANDLE, find_pending, speak
from campusid.idp.web.http import query_params, see_other
from campusid.idp.web.render import error_page


async def language_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    try:
        q = query_params(request)
    except RequestError as exc:
        return error_page(ctx, request, exc.description, title=N_("Language"))
    locale = i18n.locale_of_tag(q.get("lang"))
    if locale is None:
        return error_page(ctx, request, N_("This language is not offered here."), title=N_("Language"))
    if HANDLE in q:
        at = await find_pending(ctx, request, q[HANDLE])
        if at is None or not await speak(ctx, at, locale):
            response = expired(ctx, request)
        else:
            response = see_other(stage_page(ctx, at))
    else:
        response = see_other(local_next(ctx, q.get("next")))
    language.remember(ctx, response, locale)
    return response
