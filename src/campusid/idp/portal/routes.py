"""The developer portal under /developer: my apps, register, edit, submit, activate,
rotate the secret, request a change to an active app. Every transition goes through AppService."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from campusid.i18n import N_
from campusid.idp.apps import AppError, ValidationFailed
from campusid.idp.apps.service import ACTIVE, APPROVED, EDITABLE, UNDER_REVIEW
from campusid.idp.context import Context
from campusid.idp.portal import views
from campusid.idp.portal.web import DEVELOPER_ROLES, Viewer, app_error, guard, guarded_form, problem, render, see_other

PURPOSE = "portal"
# What the app's page says after a step (`?done=`).
DONE = {
    "created": N_("The application was registered as a draft."),
    "edited": N_("Your changes were saved."),
    "submitted": N_("Submitted for review."),
    "activated": N_("The application is active."),
    "rotated": N_("A new secret was issued; the old one no longer works."),
    "revision": N_("Your change was submitted for review."),
}


def _ctx(request: Request) -> Context:
    return request.app.state.ctx


def _app_url(ctx: Context, client_id: str, done: str | None = None) -> str:
    return ctx.path(f"/developer/apps/{client_id}") + (f"?done={done}" if done else "")


async def _detail(
    ctx: Context,
    viewer: Viewer,
    client_id: str,
    status: int = 200,
    secret: str | None = None,
    done: str | None = None,
    error: str | None = None,
) -> Response:
    app = await ctx.apps.show(client_id)
    state = app["state"]
    revision = app["revision"]
    return render(
        ctx,
        viewer,
        "portal/app.html",
        status=status,
        app=app,
        scopes=views.scope_rows(app, app["granted_scopes"] if state in (APPROVED, ACTIVE, "suspended") else None),
        revision_scopes=views.scope_rows(revision) if revision else [],
        history=views.history(app["history"]),
        secret=secret,
        switch=secret is None,  # a secret is shown this once: a language switch would lose it
        notice=DONE.get(done or ""),
        error=error,
        can_edit=state in EDITABLE,
        can_submit=state in EDITABLE,
        can_activate=state == APPROVED,
        can_change=state == ACTIVE and (revision is None or revision["state"] != UNDER_REVIEW),
        can_rotate=app["type"] == "web",
        authorize_url=ctx.url("/oauth/authorize"),
    )


async def index(request: Request) -> Response:
    ctx = _ctx(request)
    viewer, denied = await guard(ctx, request, DEVELOPER_ROLES, PURPOSE)
    if denied:
        return denied
    return render(ctx, viewer, "portal/index.html", apps=await ctx.apps.list_owned(viewer.username))


async def new_form(request: Request) -> Response:
    ctx = _ctx(request)
    viewer, denied = await guard(ctx, request, DEVELOPER_ROLES, PURPOSE)
    if denied:
        return denied
    return _form(ctx, viewer, "new", views.form_state({"scopes": ["openid", "profile"]}))


def _form(
    ctx: Context,
    viewer: Viewer,
    mode: str,
    values: dict,
    app: dict | None = None,
    error: str | None = None,
    status: int = 200,
) -> Response:
    actions = {
        "new": ctx.path("/developer/apps"),
        "edit": ctx.path(f"/developer/apps/{app['client_id']}/edit") if app else "",
        "change": ctx.path(f"/developer/apps/{app['client_id']}/edit") if app else "",
    }
    return render(
        ctx,
        viewer,
        "portal/form.html",
        status=status,
        mode=mode,
        form=values,
        app=app,
        action=actions[mode],
        error=error,
    )


async def create(request: Request) -> Response:
    ctx, viewer, form, refused = await guarded_form(request, DEVELOPER_ROLES, PURPOSE)
    if refused:
        return refused
    config = views.form_config(form)
    app_type = form.get("type", "")
    try:
        app, secret = await ctx.apps.create(app_type=app_type, owner=viewer.username, **config)
    except ValidationFailed as exc:
        return _form(ctx, viewer, "new", views.form_state(config, app_type), error=exc.message, status=422)
    except AppError as exc:
        return app_error(ctx, viewer, exc)
    # The secret goes into this one response body only: never a URL, never stored in clear.
    return await _detail(ctx, viewer, app["client_id"], status=201, secret=secret, done="created")


async def _own_app(ctx, request: Request):
    """(viewer, client_id, None) when a signed-in developer owns the app in the path, else a refusal page."""
    viewer, denied = await guard(ctx, request, DEVELOPER_ROLES, PURPOSE)
    if denied:
        return None, None, denied
    client_id = request.path_params["client_id"]
    try:
        await ctx.apps.owned(client_id, viewer.username)
    except AppError as exc:
        return viewer, client_id, app_error(ctx, viewer, exc, back=ctx.path("/developer"))
    return viewer, client_id, None


async def detail(request: Request) -> Response:
    ctx = _ctx(request)
    viewer, client_id, refused = await _own_app(ctx, request)
    if refused:
        return refused
    return await _detail(ctx, viewer, client_id, done=request.query_params.get("done"))


def _edit_mode(app: dict) -> str | None:
    if app["state"] in EDITABLE:
        return "edit"
    if app["state"] == ACTIVE:
        return "change"
    return None


async def edit_form(request: Request) -> Response:
    ctx = _ctx(request)
    viewer, client_id, refused = await _own_app(ctx, request)
    if refused:
        return refused
    app = await ctx.apps.show(client_id)
    mode = _edit_mode(app)
    if mode is None:
        why = N_("cannot edit an application that is %(state)s (only draft or rejected)", state=app["state"])
        return problem(ctx, viewer, 409, why, back=_app_url(ctx, client_id))
    source = app["revision"] if mode == "change" and app["revision"] else app
    return _form(ctx, viewer, mode, views.form_state(source, app["type"]), app=app)


async def edit(request: Request) -> Response:
    ctx, viewer, form, refused = await guarded_form(request, DEVELOPER_ROLES, PURPOSE)
    if refused:
        return refused
    client_id = request.path_params["client_id"]
    back = _app_url(ctx, client_id)
    try:
        await ctx.apps.owned(client_id, viewer.username)
        app = await ctx.apps.show(client_id)
        config = views.form_config(form)
        mode = _edit_mode(app) or "edit"
        try:
            if mode == "change":
                await ctx.apps.propose_revision(client_id, actor=viewer.username, **config)
            else:
                await ctx.apps.edit(client_id, actor=viewer.username, **config)
        except ValidationFailed as exc:
            return _form(
                ctx, viewer, mode, views.form_state(config, app["type"]), app=app, error=exc.message, status=422
            )
    except AppError as exc:
        return app_error(ctx, viewer, exc, back=back)
    return see_other(_app_url(ctx, client_id, "revision" if mode == "change" else "edited"))


def _step(action: str, done: str):
    async def handler(request: Request) -> Response:
        client_id = request.path_params["client_id"]
        ctx, viewer, _form_data, refused = await guarded_form(request, DEVELOPER_ROLES, PURPOSE)
        if refused:
            return refused
        try:
            await ctx.apps.owned(client_id, viewer.username)
            if action == "rotate":
                secret = await ctx.apps.rotate_secret(client_id, actor=viewer.username)
                return await _detail(ctx, viewer, client_id, secret=secret, done=done)
            await getattr(ctx.apps, action)(client_id, actor=viewer.username)
        except AppError as exc:
            return app_error(ctx, viewer, exc, back=_app_url(ctx, client_id))
        return see_other(_app_url(ctx, client_id, done))

    handler.__name__ = f"portal_{action}"
    return handler


def routes() -> list[Route]:
    base = "/developer"
    return [
        Route(base, index, methods=["GET"]),
        Route(f"{base}/apps/new", new_form, methods=["GET"]),
        Route(f"{base}/apps", create, methods=["POST"]),
        Route(f"{base}/apps/{{client_id}}", detail, methods=["GET"]),
        Route(f"{base}/apps/{{client_id}}/edit", edit_form, methods=["GET"]),
        Route(f"{base}/apps/{{client_id}}/edit", edit, methods=["POST"]),
        Route(f"{base}/apps/{{client_id}}/submit", _step("submit", "submitted"), methods=["POST"]),
        Route(f"{base}/apps/{{client_id}}/activate", _step("activate", "activated"), methods=["POST"]),
        Route(f"{base}/apps/{{client_id}}/rotate-secret", _step("rotate", "rotated"), methods=["POST"]),
    ]
