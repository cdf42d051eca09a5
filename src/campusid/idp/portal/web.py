"""What every portal and console page shares: who is signed in, the language, CSRF-checked
forms, and rendering with the security headers of `http.page()`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import i18n
from campusid.idp.apps import AppError
from campusid.idp.context import Context
from campusid.idp.errors import RequestError
from campusid.idp.pages.account import policy_redirect
from campusid.idp.store.rows import User
from campusid.idp.web.browser import CurrentSession, csrf_ok, csrf_token, current_session
from campusid.idp.web.http import detour, language, page, read_form, see_other

DEVELOPER_ROLES = ("developer", "admin")
ADMIN_ROLES = ("admin",)


@dataclass
class Viewer:
    """The signed-in user looking at a page, in their language, with the CSRF token for its forms."""

    user: User
    session: CurrentSession
    lang: str
    t: Callable[[str], str]
    purpose: str

    @property
    def username(self) -> str:
        return self.user.username

    @property
    def is_admin(self) -> bool:
        return self.user.role == "admin"


def when(ts: int | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts)) if ts else "—"


async def guard(
    ctx: Context, request: Request, roles: tuple[str, ...], purpose: str
) -> tuple[Viewer | None, Response | None]:
    """(viewer, None) when the session's user has one of `roles`; otherwise (None, response):
    a 303 to the IdP's own login page (signed out) or a 403 page (wrong role)."""
    session = await current_session(ctx, request)
    user = await ctx.store.users.get(session.user_id) if session else None
    lang, t = language(request)
    if session is None or user is None:
        return None, see_other(detour(ctx.path("/login"), request, ctx.path("/")))
    redirect = await policy_redirect(ctx, request, user, session)  # a second factor first, if required
    if redirect is not None:
        return None, redirect
    viewer = Viewer(user=user, session=session, lang=lang, t=t, purpose=purpose)
    if user.role not in roles:
        key = "admin.not_admin" if roles == ADMIN_ROLES else "portal.not_developer"
        return None, problem(ctx, viewer, 403, t(key))
    return viewer, None


def render(ctx: Context, viewer: Viewer, template: str, status: int = 200, **values) -> Response:
    return page(
        ctx,
        template,
        status=status,
        lang=viewer.lang,
        t=viewer.t,
        me=viewer.user,
        csrf=csrf_token(ctx, viewer.purpose, viewer.session.raw_id),
        when=when,
        **values,
    )


def problem(ctx: Context, viewer: Viewer, status: int, detail: str, back: str | None = None) -> Response:
    """A plain-language error page: a translated summary and the precise reason."""
    summary_key = f"err.{status}"
    return render(
        ctx,
        viewer,
        "portal/problem.html",
        status=status,
        summary=viewer.t(summary_key) if i18n.has(summary_key) else viewer.t("err.title"),
        detail=detail,
        back=back,
    )


def app_error(ctx: Context, viewer: Viewer, exc: AppError, back: str | None = None) -> Response:
    return problem(ctx, viewer, exc.status, exc.message, back)


async def posted_form(ctx: Context, request: Request, viewer: Viewer) -> tuple[dict | None, Response | None]:
    """The form, only if it carries this session's CSRF token for this area; nothing changes otherwise."""
    try:
        form = await read_form(request)
    except RequestError as exc:
        return None, problem(ctx, viewer, 400, exc.description or viewer.t("err.400"))
    if not csrf_ok(ctx, viewer.purpose, viewer.session.raw_id, form.get("csrf_token")):
        return None, problem(ctx, viewer, 403, viewer.t("err.csrf"))
    return form, None


async def guarded_form(
    request: Request, roles: tuple[str, ...], purpose: str
) -> tuple[Context, Viewer | None, dict | None, Response | None]:
    """A form posted by a user with one of `roles` and this area's CSRF token: (ctx, viewer, form,
    None); otherwise the refusal of :func:`guard` or :func:`posted_form` comes last."""
    ctx: Context = request.app.state.ctx
    viewer, denied = await guard(ctx, request, roles, purpose)
    if denied is not None or viewer is None:
        return ctx, None, None, denied
    form, refused = await posted_form(ctx, request, viewer)
    return ctx, viewer, form, refused
