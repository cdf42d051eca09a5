"""The review console under /admin: the queue oldest first, an app's detail with
its redirect URIs checked, approve / reject / suspend / reinstate, the audit log, users and roles."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from campusid.i18n import N_
from campusid.idp import events as ev
from campusid.idp import release
from campusid.idp.admin import roles
from campusid.idp.apps import AppError
from campusid.idp.apps.service import ACTIVE, STATES, SUSPENDED, UNDER_REVIEW
from campusid.idp.context import Context
from campusid.idp.portal import views
from campusid.idp.portal.web import ADMIN_ROLES, Viewer, app_error, guard, guarded_form, problem, render, see_other

PURPOSE = "admin"
# What the console says after a decision (`?done=`).
DONE = {
    "approved": N_("Approved."),
    "rejected": N_("Rejected; the developer will see your feedback."),
    "suspended": N_("Suspended."),
    "reinstated": N_("Reinstated."),
    "role": N_("The role was changed."),
}
# What the Events page says about a filter it cannot use.
EVENT_FILTER_PROBLEMS = {
    "bad_value": N_("A filter holds a character that cannot be searched."),
    "bad_type": N_("That is not an event type."),
    "bad_since": N_("The time is not a date and time such as 2026-01-31T08:00."),
    "bad_page": N_("That page does not exist."),
}


def _ctx(request: Request) -> Context:
    return request.app.state.ctx


async def _admin(request: Request) -> tuple[Context, Viewer | None, Response | None]:
    ctx = _ctx(request)
    viewer, denied = await guard(ctx, request, ADMIN_ROLES, PURPOSE)
    return ctx, viewer, denied


def _notice(request: Request) -> str | None:
    return DONE.get(request.query_params.get("done") or "")


async def queue(request: Request) -> Response:
    ctx, viewer, denied = await _admin(request)
    if denied:
        return denied
    return render(ctx, viewer, "admin/queue.html", items=await ctx.apps.review_queue(), notice=_notice(request))


async def all_apps(request: Request) -> Response:
    ctx, viewer, denied = await _admin(request)
    if denied:
        return denied
    state = request.query_params.get("state") or None
    if state not in STATES:
        state = None
    return render(ctx, viewer, "admin/apps.html", apps=await ctx.apps.list_all(state), state=state, states=STATES)


async def _detail(
    ctx: Context, viewer: Viewer, client_id: str, status: int = 200, notice: str | None = None
) -> Response:
    app = await ctx.apps.show(client_id)
    revision = app["revision"]
    reviewing = "app" if app["state"] == UNDER_REVIEW else None
    if app["state"] == ACTIVE and revision and revision["state"] == UNDER_REVIEW:
        reviewing = "revision"
    proposed = revision if reviewing == "revision" else app
    return render(
        ctx,
        viewer,
        "admin/app.html",
        status=status,
        app=app,
        reviewing=reviewing,
        proposed=proposed,
        uri_checks=views.checks(proposed, app["type"]),
        cas_release=views.cas_release(app["granted_scopes"] if reviewing is None else proposed["scopes"]),
        scopes=views.scope_rows(proposed),
        current_scopes=views.scope_rows(app, app["granted_scopes"]),
        history=views.history(app["history"]),
        own=app["owner"] == viewer.username,
        can_suspend=app["state"] == ACTIVE,
        can_reinstate=app["state"] == SUSPENDED,
        notice=notice,
    )


async def detail(request: Request) -> Response:
    ctx, viewer, denied = await _admin(request)
    if denied:
        return denied
    client_id = request.path_params["client_id"]
    try:
        await ctx.apps.get(client_id)
    except AppError as exc:
        return app_error(ctx, viewer, exc, back=ctx.path("/admin"))
    return await _detail(ctx, viewer, client_id, notice=_notice(request))


def _decision(action: str, done: str):
    async def handler(request: Request) -> Response:
        ctx, viewer, form, refused = await guarded_form(request, ADMIN_ROLES, PURPOSE)
        if refused:
            return refused
        client_id = request.path_params["client_id"]
        revision = form.get("subject") == "revision"
        apps, by = ctx.apps, viewer.username
        try:
            if action == "approve":
                granted = [s for s in release.SENSITIVE if form.get(f"grant.{s}")]
                face = apps.registrations.of((await apps.get(client_id)).type)
                grant_types = [g for g in face.grant_types if form.get(f"grant_type.{g}")]
                if revision:
                    await apps.approve_revision(client_id, by, granted, grant_types)
                else:
                    await apps.approve(client_id, by, granted, grant_types, bool(form.get("require_mfa")))
            elif action == "reject":
                await (apps.reject_revision if revision else apps.reject)(client_id, by, form.get("feedback", ""))
            elif action == "suspend":
                await apps.suspend(client_id, by, form.get("reason", "").strip() or None)
            else:
                await apps.reinstate(client_id, by)
        except AppError as exc:
            return app_error(ctx, viewer, exc, back=ctx.path(f"/admin/apps/{client_id}"))
        return see_other(ctx.path(f"/admin/apps/{client_id}?done={done}"))

    handler.__name__ = f"admin_{action}"
    return handler


async def audit(request: Request) -> Response:
    ctx, viewer, denied = await _admin(request)
    if denied:
        return denied
    events = list(reversed(await ctx.apps.audit_log()))
    return render(ctx, viewer, "admin/audit.html", events=views.history(events))


EVENTS_PER_PAGE = 50
_MAX_EVENT_ID = 2**62


def _since(value: str) -> int:
    """A datetime-local value (or any ISO 8601 date-time), read as UTC when it names no offset."""
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp())


def event_filters(query) -> tuple[dict, dict, str | None]:
    """The Events page's query: (the filters as typed, to show again; the store's arguments; the
    kind of the first problem (EVENT_FILTER_PROBLEMS), or None). A hostile value is a problem to
    show, never a 500."""
    typed = {name: (query.get(name) or "").strip()[:100] for name in ("user", "client", "type", "since", "before")}
    args: dict = {}
    try:
        args["username"], args["client_id"] = ev.as_filter(typed["user"]), ev.as_filter(typed["client"])
    except ValueError:
        return typed, args, "bad_value"
    if typed["type"] and typed["type"] not in ev.TYPES:
        return typed, args, "bad_type"
    args["type"] = typed["type"] or None
    if typed["since"]:
        try:
            args["since"] = _since(typed["since"])
        except (ValueError, OverflowError, OSError):
            return typed, args, "bad_since"
    if typed["before"]:
        if (
            not typed["before"].isascii()
            or not typed["before"].isdigit()
            or not 0 < int(typed["before"]) < _MAX_EVENT_ID
        ):
            return typed, args, "bad_page"
        args["before_id"] = int(typed["before"])
    return typed, args, None


async def events_page(request: Request) -> Response:
    """Security events, newest first, filtered by user, app, type and time, a page at a time by
    id (the next page starts below the last id shown, whatever its depth)."""
    ctx, viewer, denied = await _admin(request)
    if denied:
        return denied
    typed, args, problem = event_filters(request.query_params)
    found = [] if problem else await ctx.store.events.list(**args, limit=EVENTS_PER_PAGE + 1)
    shown = found[:EVENTS_PER_PAGE]
    kept = {k: v for k, v in typed.items() if v and k != "before"}
    base = ctx.path("/admin/events")
    older = None
    if len(found) > EVENTS_PER_PAGE:
        older = base + "?" + urlencode({**kept, "before": shown[-1].id})
    return render(
        ctx,
        viewer,
        "admin/events.html",
        status=400 if problem else 200,
        events=shown,
        filters=typed,
        types=sorted(ev.TYPES),
        problem=EVENT_FILTER_PROBLEMS[problem] if problem else None,
        paged="before_id" in args,
        newest_url=base + ("?" + urlencode(kept) if kept else ""),
        older_url=older,
    )


async def users(request: Request) -> Response:
    ctx, viewer, denied = await _admin(request)
    if denied:
        return denied
    return render(
        ctx,
        viewer,
        "admin/users.html",
        users=await roles.list_users(ctx.store),
        roles=roles.ROLES,
        notice=_notice(request),
    )


async def set_role(request: Request) -> Response:
    ctx, viewer, form, refused = await guarded_form(request, ADMIN_ROLES, PURPOSE)
    if refused:
        return refused
    try:
        await roles.change_role(ctx.store, request.path_params["username"], form.get("role", ""), viewer.username)
    except AppError as exc:
        return problem(ctx, viewer, exc.status, exc.message, back=ctx.path("/admin/users"))
    return see_other(ctx.path("/admin/users?done=role"))


def routes() -> list[Route]:
    base = "/admin"
    return [
        Route(base, queue, methods=["GET"]),
        Route(f"{base}/apps", all_apps, methods=["GET"]),
        Route(f"{base}/apps/{{client_id}}", detail, methods=["GET"]),
        Route(f"{base}/apps/{{client_id}}/approve", _decision("approve", "approved"), methods=["POST"]),
        Route(f"{base}/apps/{{client_id}}/reject", _decision("reject", "rejected"), methods=["POST"]),
        Route(f"{base}/apps/{{client_id}}/suspend", _decision("suspend", "suspended"), methods=["POST"]),
        Route(f"{base}/apps/{{client_id}}/reinstate", _decision("reinstate", "reinstated"), methods=["POST"]),
        Route(f"{base}/audit", audit, methods=["GET"]),
        Route(f"{base}/events", events_page, methods=["GET"]),
        Route(f"{base}/users", users, methods=["GET"]),
        Route(f"{base}/users/{{username}}/role", set_role, methods=["POST"]),
    ]
