"""`campusid apps`: register client applications and take them through review."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from campusid.cli.common import AdminOpt, JsonOpt, Services, emit, fail, out, say
from campusid.idp.apps import AppError

app = typer.Typer(no_args_is_help=True, help="Register and review client applications.")


def _app_human(data: dict) -> None:
    """The app in lines for people; every value as it is (markup=False, or styled pieces by say):
    names, URIs and feedback are the developer's and the admin's text."""
    state = ("  state=", (data["state"], "bold"))
    say((data["name"], "bold"), f"  client_id={data['client_id']}  type={data['type']}", *state)
    if data.get("redirect_uris") or data["type"] != "cas":
        out.print(f"  redirect URIs: {', '.join(data['redirect_uris'])}", markup=False)
    if data.get("services"):
        out.print(f"  CAS services: {', '.join(data['services'])}", markup=False)
    out.print(f"  scopes: {' '.join(data['scopes'])}  granted: {' '.join(data['granted_scopes']) or '-'}", markup=False)
    if data.get("grant_types") or data.get("granted_grant_types"):
        asked, granted = " ".join(data["grant_types"]) or "-", " ".join(data["granted_grant_types"]) or "-"
        out.print(f"  extra grant types asked: {asked}  granted: {granted}", markup=False)
    if data.get("require_mfa"):
        out.print("  every sign-in uses a second factor (--require-mfa)")
    if data.get("post_logout_redirect_uris"):
        out.print(f"  post-logout redirect URIs: {', '.join(data['post_logout_redirect_uris'])}", markup=False)
    if data.get("backchannel_logout_uri"):
        out.print(f"  back-channel logout URI: {data['backchannel_logout_uri']}", markup=False)
    if data.get("client_secret"):
        out.print(f"  client secret (shown once, store it on your server): {data['client_secret']}", markup=False)
    for event in data.get("history", []):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(event["at"]))
        line = f"  {when}Z {event['action']} by {event['actor'] or '-'}: {event['from'] or '-'} → {event['to']}"
        if event["feedback"]:
            line += f"  feedback: {event['feedback']}"
        out.print(line, highlight=False, markup=False)


def _run_app(as_json: bool, action):
    """Run one review-workflow step (a coroutine function of the services) and print the app."""

    async def guarded(svc: Services) -> dict:
        try:
            return await action(svc)
        except AppError as exc:
            fail(exc.message, 1, as_json)

    emit(Services(as_json=as_json).run(guarded), as_json, _app_human)


_POST_LOGOUT_OPT = typer.Option(
    "--post-logout-redirect-uri",
    help="Where RP-initiated logout may send the browser back; once per URI (exact match).",
)
_BACKCHANNEL_OPT = typer.Option(
    "--backchannel-logout-uri",
    help="Where logout tokens are POSTed when a session ends (https, or http on loopback); '' removes it.",
)


@app.command("create")
def apps_create(
    name: Annotated[str, typer.Option()],
    type_: Annotated[str, typer.Option("--type", help="web, native or cas.")],
    owner: Annotated[str, typer.Option(help="Username of the developer who owns the app.")],
    redirect_uri: Annotated[
        list[str] | None, typer.Option("--redirect-uri", help="Once per URI (web and native apps).")
    ] = None,
    service: Annotated[
        list[str] | None, typer.Option("--service", help="A CAS app's service URL (a prefix); once per URL.")
    ] = None,
    scope: Annotated[list[str] | None, typer.Option("--scope", help="Once per scope.")] = None,
    description: Annotated[str, typer.Option()] = "",
    sector_identifier_uri: Annotated[str | None, typer.Option()] = None,
    client_id: Annotated[str | None, typer.Option(help="Choose the client_id (default: generated).")] = None,
    grant_type: Annotated[
        list[str] | None,
        typer.Option("--grant-type", help="Ask the review for a grant type: device_code, or cas_proxy for a CAS app."),
    ] = None,
    post_logout_redirect_uri: Annotated[list[str] | None, _POST_LOGOUT_OPT] = None,
    backchannel_logout_uri: Annotated[str | None, _BACKCHANNEL_OPT] = None,
    as_json: JsonOpt = False,
):
    """Register an application in `draft`; a web app's secret is printed this once."""

    async def action(svc):
        data, secret = await svc.apps.create(
            name=name,
            app_type=type_,
            redirect_uris=redirect_uri,
            services=service,
            scopes=scope,
            owner=owner,
            description=description,
            sector_identifier_uri=sector_identifier_uri,
            client_id=client_id,
            grant_types=grant_type,
            post_logout_redirect_uris=post_logout_redirect_uri,
            backchannel_logout_uri=backchannel_logout_uri,
        )
        if secret:
            data["client_secret"] = secret
        return data

    _run_app(as_json, action)


@app.command("edit")
def apps_edit(
    client_id: str,
    name: Annotated[str | None, typer.Option()] = None,
    redirect_uri: Annotated[list[str] | None, typer.Option("--redirect-uri")] = None,
    service: Annotated[list[str] | None, typer.Option("--service", help="A CAS app's service URLs.")] = None,
    scope: Annotated[list[str] | None, typer.Option("--scope")] = None,
    description: Annotated[str | None, typer.Option()] = None,
    grant_type: Annotated[list[str] | None, typer.Option("--grant-type", help="device_code or cas_proxy")] = None,
    post_logout_redirect_uri: Annotated[list[str] | None, _POST_LOGOUT_OPT] = None,
    backchannel_logout_uri: Annotated[str | None, _BACKCHANNEL_OPT] = None,
    as_json: JsonOpt = False,
):
    """Change a draft or rejected app (lists given replace the old ones; does not resubmit); for
    an active app, file the change as a revision for review (the current configuration serves
    until an admin approves it)."""
    changes = {
        "name": name,
        "redirect_uris": redirect_uri or None,
        "services": service or None,
        "scopes": scope or None,
        "description": description,
        "grant_types": grant_type or None,
        "post_logout_redirect_uris": post_logout_redirect_uri or None,
        "backchannel_logout_uri": backchannel_logout_uri,
    }

    async def action(svc):
        app = await svc.apps.get(client_id)
        if app.state != "active":
            return await svc.apps.edit(client_id, **changes)
        current = {
            "name": app.name,
            "description": app.description,
            "redirect_uris": list(app.redirect_uris),
            "scopes": list(app.scopes),
            "justifications": dict(app.justifications or {}),
            "sector_identifier_uri": app.sector_identifier_uri,
            "grant_types": list(app.grant_types),
            "post_logout_redirect_uris": list(app.post_logout_redirect_uris),
            "backchannel_logout_uri": app.backchannel_logout_uri,
            "services": list(app.services),
        }
        given = {k: v for k, v in changes.items() if v is not None}
        return await svc.apps.propose_revision(client_id, actor=None, **{**current, **given})

    _run_app(as_json, action)


@app.command("submit")
def apps_submit(client_id: str, as_json: JsonOpt = False):
    """Submit a draft or rejected app for review."""
    _run_app(as_json, lambda svc: svc.apps.submit(client_id))


@app.command("approve")
def apps_approve(
    client_id: str,
    by: Annotated[str, typer.Option(help="The admin who approves (never the owner).")],
    grant_scope: Annotated[list[str] | None, typer.Option("--grant-scope", help="Sensitive scope granted.")] = None,
    grant_type: Annotated[
        list[str] | None,
        typer.Option(
            "--grant-type",
            help="Grant type granted beyond the default flow: device_code (RFC 8628), cas_proxy (CAS proxy tickets).",
        ),
    ] = None,
    require_mfa: Annotated[
        bool, typer.Option("--require-mfa", help="Every sign-in to this app uses a second factor.")
    ] = False,
    as_json: JsonOpt = False,
):
    """Approve an app under review (default: every requested sensitive scope, no extra grant type),
    or the revision under review of an active app (default: its grant types unchanged)."""

    async def action(svc):
        app = await svc.apps.get(client_id)
        if app.state == "active" and app.revision_state == "under_review":
            return await svc.apps.approve_revision(client_id, by, grant_scope, grant_type)
        return await svc.apps.approve(client_id, by, grant_scope, grant_type, require_mfa)

    _run_app(as_json, action)


@app.command("reject")
def apps_reject(
    client_id: str,
    by: Annotated[str, typer.Option()],
    feedback: Annotated[str, typer.Option(help="What the developer must change.")],
    as_json: JsonOpt = False,
):
    """Reject an app under review, with feedback."""
    _run_app(as_json, lambda svc: svc.apps.reject(client_id, by, feedback))


@app.command("activate")
def apps_activate(client_id: str, as_json: JsonOpt = False):
    """Activate an approved app: it may now use the authorization endpoint."""
    _run_app(as_json, lambda svc: svc.apps.activate(client_id))


@app.command("suspend")
def apps_suspend(client_id: str, by: AdminOpt, as_json: JsonOpt = False):
    """Suspend an active app."""
    _run_app(as_json, lambda svc: svc.apps.suspend(client_id, by))


@app.command("reinstate")
def apps_reinstate(client_id: str, by: AdminOpt, as_json: JsonOpt = False):
    """Reinstate a suspended app."""
    _run_app(as_json, lambda svc: svc.apps.reinstate(client_id, by))


@app.command("show")
def apps_show(client_id: str, as_json: JsonOpt = False):
    """Show an app with its review history."""
    _run_app(as_json, lambda svc: svc.apps.show(client_id))


@app.command("rotate-secret")
def apps_rotate_secret(client_id: str, as_json: JsonOpt = False):
    """Replace a web app's secret; the new one is printed this once."""

    async def action(svc):
        secret = await svc.apps.rotate_secret(client_id)
        return {**await svc.apps.show(client_id), "client_secret": secret}

    _run_app(as_json, action)


@app.command("list")
def apps_list(state: Annotated[str | None, typer.Option()] = None, as_json: JsonOpt = False):
    """List apps, optionally in one state."""

    async def action(svc: Services) -> list[dict]:
        return [await svc.apps.show(c.client_id) for c in await svc.store.apps.list(state=state)]

    rows = Services(as_json=as_json).run(action)
    for row in rows:
        row.pop("history")

    def human(data):
        table = Table("client_id", "name", "type", "state", "owner")
        for a in data["apps"]:
            table.add_row(*map(Text, (a["client_id"], a["name"], a["type"], a["state"], a["owner"] or "")))
        out.print(table)

    emit({"apps": rows}, as_json, human)


@app.command("import-cas")
def apps_import_cas(
    files: Annotated[list[Path], typer.Argument(help="Apereo CAS JSON service definitions (RegexRegisteredService).")],
    owner: Annotated[
        str | None, typer.Option(help="Username who owns the imported apps (default: the first admin).")
    ] = None,
    as_json: JsonOpt = False,
):
    """Read an Apereo CAS service registry into draft CAS apps: each serviceId that is a plain URL
    prefix becomes a service; every other definition is refused with its reason (docs/cas.md).
    Nothing is activated: each app goes through the review."""
    from campusid.idp.cas.apereo_import import Refused, read_definition

    async def action(svc: Services) -> dict:
        owner_name = owner or next((u.username for u in await svc.store.users.list() if u.role == "admin"), None)
        if owner_name is None:
            fail("there is no admin to own the imported apps: name one with --owner", 1, as_json)
        imported, refused = [], []
        for path in files:
            try:
                draft = read_definition(path.read_text(encoding="utf-8"))
                data, _ = await svc.apps.create(
                    name=draft.name,
                    app_type="cas",
                    services=draft.services,
                    scopes=draft.scopes,
                    owner=owner_name,
                    description=draft.description,
                    client_id=draft.client_id,
                    grant_types=draft.grant_types,
                )
            except (OSError, UnicodeDecodeError) as exc:
                refused.append({"file": str(path), "reason": f"cannot be read ({type(exc).__name__})"})
                continue
            except (Refused, AppError) as exc:
                refused.append({"file": str(path), "reason": getattr(exc, "message", None) or str(exc)})
                continue
            imported.append(
                {
                    "file": str(path),
                    "client_id": data["client_id"],
                    "name": data["name"],
                    "state": data["state"],
                    "services": data["services"],
                    "scopes": data["scopes"],
                    "grant_types": data["grant_types"],
                    "notes": draft.notes,
                }
            )
        return {
            "imported": imported,
            "refused": refused,
            "counts": {"imported": len(imported), "refused": len(refused)},
        }

    def human(data: dict) -> None:
        for item in data["imported"]:
            say(("imported ", "bold"), f"{item['file']} -> {item['client_id']} (draft): {', '.join(item['services'])}")
            for note in item["notes"]:
                out.print(f"    note: {note}", markup=False)
        for item in data["refused"]:
            say(("refused  ", "bold red"), f"{item['file']}: {item['reason']}")
        out.print(f"{data['counts']['imported']} imported as drafts, {data['counts']['refused']} refused", markup=False)

    emit(Services(as_json=as_json).run(action), as_json, human)
