"""What every portal and console page shares: who is signed in, CSRF-checked forms, and rendering
(web/render.py: the reader's language, the security headers), with the review workflow's names
(labels.py) at hand."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from campusid.i18n import N_
from campusid.idp.apps import AppError
from campusid.idp.context import Context
from campusid.idp.errors import RequestError
from campusid.idp.pages.account import policy_redirect
from campusid.idp.portal import labels
from campusid.idp.store.rows import User
from campusid.idp.web.browser import CurrentSession, csrf_ok, csrf_token, current_session
from campusid.idp.web.http import detour, read_form, see_other
from campusid.idp.web.render import FORM_EXPIRED, UNREADABLE, page

DEVELOPER_ROLES = ("developer", "admin")
ADMIN_ROLES = ("admin",)
# A problem page's summary, by its status; its detail says precisely what was wrong.
SUMMARIES = {
    400: UNREADABLE,
    403: N_("You are not allowed to do that."),
    404: N_("That application does not exist."),
    409: N_("That step is not possible in the application's current state."),
    422: N_("Please correct the form."),
}
DID_NOT_WORK = N_("That did not work")


@dataclass
class Viewer:
    """The signed-in user looking at a page (the request), with the CSRF token's purpose for its forms."""

    user: User
    session: CurrentSession
    request: Request
    purpose: str

    @property
    def username(self) -> str:
        return self.user.username

    @property
    def is_admin(self) -> bool:
        return self.user.role == "admin"


async def guard(
    ctx: Context, request: Request, roles: tuple[str, ...], purpose: str
) -> tuple[Viewer | None, Response | None]:
    """(viewer, None) when the session's user has one of `roles`; otherwise (None, response):
    a 303 to the IdP's own login page (signed out) or a 403 page (wrong role)."""
    session = await current_session(ctx, request)
    user = await ctx.store.users.get(session.user_id) if session else None
    if session is None or user is None:
        return None, see_other(detour(ctx.path("/login"), request, ctx.path("/")))
    redirect = await policy_redirect(ctx, request, user, session)  # a second factor first, if required
    if redirect is not None:
        return None, redirect
    viewer = Viewer(user=user, session=session, request=request, purpose=purpose)
    if user.role not in roles:
        if roles == ADMIN_ROLES:
            why = N_("Only administrators may use the review console.")
        else:
            why = N_(
                "Only developers and administrators may register applications. "
                "Ask an administrator for the developer role."
            )
        return None, problem(ctx, viewer, 403, why)
    return viewer, None


def render(ctx: Context, viewer: Viewer, template: str, status: int = 200, **values) -> Response:
    return page(
        ctx,
        viewer.request,
        template,
        status=status,
        me=viewer.user,
        csrf=csrf_token(ctx, viewer.purpose, viewer.session.raw_id),
        labels=labels,
        **values,
    )


def problem(ctx: Context, viewer: Viewer, status: int, detail: str, back: str | None = None) -> Response:
    """A plain-language error page: a summary by its status and the precise reason (`detail`,
    shown in the page's language when it was marked, as the review workflow's errors are)."""
    return render(
        ctx,
        viewer,
        "portal/problem.html",
        status=status,
        summary=SUMMARIES.get(status, DID_NOT_WORK),
        detail=detail,
        back=back,
        after_post=back,  # the language switch of a refused form's answer: back to where it came from
    )


def app_error(ctx: Context, viewer: Viewer, exc: AppError, back: str | None = None) -> Response:
    return problem(ctx, viewer, exc.status, exc.message, back)


async def posted_form(ctx: Context, request: Request, viewer: Viewer) -> tuple[dict | None, Response | None]:
    """The form, only if it carries this session's CSRF token for this area; nothing changes otherwise."""
    try:
        form = await read_form(request)
    except RequestError as exc:
        return None, problem(ctx, viewer, 400, exc.message or UNREADABLE)
    if not csrf_ok(ctx, viewer.purpose, viewer.session.raw_id, form.get("csrf_token")):
        return None, problem(ctx, viewer, 403, FORM_EXPIRED)
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
