"""Management API routes: the operations of the portal and the console, with the same permissions,
over the same AppService (one implementation of each transition)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from campusid.idp.admin import roles
from campusid.idp.api import models
from campusid.idp.api.auth import ApiError, Caller, admin, admin_writer, caller, ctx_of, developer, reader, token_for

router = APIRouter()
ERRORS = {s: {"model": models.Error} for s in (401, 403, 404, 409, 422)}


async def _readable(request: Request, c: Caller, client_id: str) -> dict:
    """Owners see their apps; admins see every app."""
    apps = ctx_of(request).apps
    if c.role != "admin":
        await apps.owned(client_id, c.username)
    return await apps.show(client_id)


@router.get("/me", response_model=models.Me, responses=ERRORS, tags=["session"])
async def me(request: Request, c: Caller = Depends(caller)):
    """Who is signed in, and the CSRF token for state-changing calls."""
    return {"user": roles.user_view(c.user), "csrf_token": token_for(request, c)}


@router.get("/apps", response_model=list[models.AppSummary], responses=ERRORS, tags=["apps"])
async def list_apps(request: Request, all: bool = False, state: str | None = None, c: Caller = Depends(reader)):
    """My applications; `all=true` (admins only) lists everyone's, optionally in one state."""
    apps = ctx_of(request).apps
    if all:
        if c.role != "admin":
            raise ApiError(403, "forbidden", "only administrators list every application")
        return await apps.list_all(state)
    return [a for a in await apps.list_owned(c.username) if state is None or a["state"] == state]


@router.post("/apps", response_model=models.App, status_code=201, responses=ERRORS, tags=["apps"])
async def create_app(body: models.AppCreate, request: Request, c: Caller = Depends(developer)):
    """Register an app in `draft`. A web app's `client_secret` is in this answer only."""
    data = body.model_dump()
    data["app_type"] = data.pop("type")
    app, secret = await ctx_of(request).apps.create(owner=c.username, **data)
    return {**app, "client_secret": secret}


@router.get("/apps/{client_id}", response_model=models.App, responses=ERRORS, tags=["apps"])
async def show_app(client_id: str, request: Request, c: Caller = Depends(reader)):
    return await _readable(request, c, client_id)


@router.patch("/apps/{client_id}", response_model=models.App, responses=ERRORS, tags=["apps"])
async def edit_app(client_id: str, body: models.AppEdit, request: Request, c: Caller = Depends(developer)):
    """Change a draft or rejected app (409 otherwise; an active app takes a revision)."""
    apps = ctx_of(request).apps
    await apps.owned(client_id, c.username)
    return await apps.edit(client_id, actor=c.username, **body.model_dump(exclude_unset=True))


@router.post("/apps/{client_id}/revision", response_model=models.App, responses=ERRORS, tags=["apps"])
async def propose_revision(client_id: str, body: models.Revision, request: Request, c: Caller = Depends(developer)):
    """File a change to an active app for review; the active configuration keeps serving logins."""
    apps = ctx_of(request).apps
    await apps.owned(client_id, c.username)
    return await apps.propose_revision(client_id, actor=c.username, **body.model_dump())


def _owner_step(action: str, summary: str):
    async def handler(client_id: str, request: Request, c: Caller = Depends(developer)):
        apps = ctx_of(request).apps
        await apps.owned(client_id, c.username)
        if action == "rotate_secret":
            secret = await apps.rotate_secret(client_id, actor=c.username)
            return {**await apps.show(client_id), "client_secret": secret}
        return await getattr(apps, action)(client_id, actor=c.username)

    handler.__name__ = action
    handler.__doc__ = summary
    return handler


for _path, _action, _summary in (
    ("submit", "submit", "Submit a draft or rejected app for review."),
    ("activate", "activate", "Activate an approved app: it may now use the authorization endpoint."),
    ("rotate-secret", "rotate_secret", "Replace a web app's secret; the new one is in this answer only."),
):
    router.add_api_route(
        f"/apps/{{client_id}}/{_path}",
        _owner_step(_action, _summary),
        methods=["POST"],
        response_model=models.App,
        responses=ERRORS,
        tags=["apps"],
    )


@router.get("/reviews", response_model=list[models.QueueItem], responses=ERRORS, tags=["reviews"])
async def review_queue(request: Request, c: Caller = Depends(admin)):
    """New apps and revisions waiting for review, oldest first."""
    return await ctx_of(request).apps.review_queue()


@router.post("/apps/{client_id}/approve", response_model=models.App, responses=ERRORS, tags=["reviews"])
async def approve(client_id: str, body: models.Approve, request: Request, c: Caller = Depends(admin_writer)):
    apps = ctx_of(request).apps
    if body.subject == "revision":
        return await apps.approve_revision(client_id, c.username, body.grant_scopes, body.grant_types)
    return await apps.approve(client_id, c.username, body.grant_scopes, body.grant_types, body.require_mfa)


@router.post("/apps/{client_id}/reject", response_model=models.App, responses=ERRORS, tags=["reviews"])
async def reject(client_id: str, body: models.Reject, request: Request, c: Caller = Depends(admin_writer)):
    apps = ctx_of(request).apps
    step = apps.reject_revision if body.subject == "revision" else apps.reject
    return await step(client_id, c.username, body.feedback)


@router.post("/apps/{client_id}/suspend", response_model=models.App, responses=ERRORS, tags=["reviews"])
async def suspend(
    client_id: str, request: Request, body: models.Suspend | None = None, c: Caller = Depends(admin_writer)
):
    return await ctx_of(request).apps.suspend(client_id, c.username, body.reason if body else None)


@router.post("/apps/{client_id}/reinstate", response_model=models.App, responses=ERRORS, tags=["reviews"])
async def reinstate(client_id: str, request: Request, c: Caller = Depends(admin_writer)):
    return await ctx_of(request).apps.reinstate(client_id, c.username)


@router.get("/apps/{client_id}/events", response_model=list[models.Event], responses=ERRORS, tags=["audit"])
async def app_events(client_id: str, request: Request, c: Caller = Depends(reader)):
    return (await _readable(request, c, client_id))["history"]


@router.get("/audit", response_model=list[models.Event], responses=ERRORS, tags=["audit"])
async def audit(request: Request, limit: int = 200, c: Caller = Depends(admin)):
    """Every transition of every app, newest first."""
    return await ctx_of(request).apps.audit_log(max(1, min(limit, 1000)))


@router.get("/users", response_model=list[models.User], responses=ERRORS, tags=["users"])
async def users(request: Request, c: Caller = Depends(admin)):
    return await roles.list_users(ctx_of(request).store)


@router.put("/users/{username}/role", response_model=models.User, responses=ERRORS, tags=["users"])
async def set_role(username: str, body: models.RoleChange, request: Request, c: Caller = Depends(admin_writer)):
    return await roles.change_role(ctx_of(request).store, username, body.role, c.username)
