"""The `campusid` command (usage in the README's CLI section). Management commands take --json and then print one JSON
object on stdout; errors go to stderr with a non-zero exit and never a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from campusid.idp import logs as _logs
from campusid.idp.apps import AppError
from campusid.idp.issuer import IssuerError
from campusid.idp.settings import Settings, SettingsError, load_settings, log_format

if TYPE_CHECKING:
    from campusid.idp.passwords import Passwords

app = typer.Typer(add_completion=False, no_args_is_help=True, help="campusid: the university's OpenID Provider.")
users_app = typer.Typer(no_args_is_help=True, help="Manage users.")
apps_app = typer.Typer(no_args_is_help=True, help="Register and review client applications.")
keys_app = typer.Typer(no_args_is_help=True, help="Signing keys.")
db_app = typer.Typer(no_args_is_help=True, help="The database.")
records_app = typer.Typer(no_args_is_help=True, help="Grades for the records API.")
events_app = typer.Typer(no_args_is_help=True, help="The security events (audit trail).")
directory_app = typer.Typer(no_args_is_help=True, help="The university directory (LDAP / Active Directory).")
for sub, name in (
    (users_app, "users"),
    (apps_app, "apps"),
    (keys_app, "keys"),
    (db_app, "db"),
    (records_app, "records"),
    (events_app, "events"),
    (directory_app, "directory"),
):
    app.add_typer(sub, name=name)

out = Console()
err = Console(stderr=True)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
AdminOpt = Annotated[str, typer.Option(help="The admin who makes the change.")]
ROLES = ("student", "developer", "admin")
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # read by idp/metrics.py in each worker
T = TypeVar("T")


def fail(message: str, code: int = 1, as_json: bool = False):
    if as_json:
        print(json.dumps({"error": message}), file=sys.stderr)
    else:
        err.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(code)


def settings(port: int | None = None) -> Settings:
    try:
        return load_settings(port=port)
    except (SettingsError, IssuerError) as exc:
        fail(str(exc), 2)


def open_store_or_fail(cfg: Settings, as_json: bool = False):
    from campusid.idp.store import StoreError, open_store

    try:
        return open_store(cfg.database_url, cfg.data_dir)
    except StoreError as exc:
        fail(str(exc), 2, as_json)


class Services:
    """What a management command works with: settings, the store, passwords, the review workflow."""

    def __init__(self, port: int | None = None, as_json: bool = False) -> None:
        from campusid.idp.apps import AppService

        self.settings = settings(port)
        self.store = open_store_or_fail(self.settings, as_json)
        self.as_json = as_json
        self.apps = AppService(self.store)

    @functools.cached_property
    def passwords(self) -> Passwords:
        """Made by the commands that hash or check a password, not by every command: making one
        hashes its timing dummy (an argon2id hash, 19 MiB by default), and in `serve` that
        allocation, freed, raised glibc's dynamic mmap threshold before the app was built, so the
        server kept ~20 MB more heap (bench/README.md)."""
        from campusid.idp.passwords import Passwords

        s = self.settings
        return Passwords(s.argon2_time_cost, s.argon2_memory_cost, s.argon2_parallelism)

    def run(self, action: Callable[[Services], Awaitable[T]]) -> T:
        """Run `action` on the async store (the same way to the database as the server's), then
        close it; a database that cannot be used is a clear error with exit status 2."""
        from campusid.idp.store import StoreError

        async def main() -> T:
            async with self.store:
                return await action(self)

        try:
            return asyncio.run(main())
        except StoreError as exc:
            fail(str(exc), 2, self.as_json)
        finally:
            self.store.close()


def emit(data: dict, as_json: bool, human=None) -> None:
    if as_json:
        print(json.dumps(data, ensure_ascii=False))
    elif human is not None:
        human(data)
    else:
        out.print_json(json.dumps(data, ensure_ascii=False))


# -- users ------------------------------------------------------------------------------------
@users_app.command("add")
def users_add(
    username: str,
    name: Annotated[str, typer.Option(help="Display name.")],
    student_number: Annotated[str | None, typer.Option(help="Student number (students).")] = None,
    role: Annotated[str, typer.Option(help="student, developer or admin.")] = "student",
    email: Annotated[str | None, typer.Option()] = None,
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="Read the password from stdin.")] = False,
    as_json: JsonOpt = False,
):
    """Add a user; the password is read from standard input (never from the command line)."""
    from campusid.idp.demo import add_user
    from campusid.idp.store import Conflict

    if role not in ROLES:
        fail(f"--role must be one of {', '.join(ROLES)}", 2, as_json)
    if not password_stdin:
        fail("give --password-stdin and pipe the password in (passwords never go on the command line)", 2, as_json)
    password = sys.stdin.readline().rstrip("\r\n")
    if len(password) < 8:
        fail("the password must be at least 8 characters", 2, as_json)
    if not username or len(username) > 64 or not username.isprintable() or " " in username:
        fail("the username must be 1-64 printable characters without spaces", 2, as_json)
    svc = Services(as_json=as_json)
    parts = name.split(" ", 1)

    async def action(svc: Services) -> None:
        try:
            await add_user(
                svc.store,
                svc.passwords,
                username=username,
                name=name,
                password=password,
                role=role,
                student_number=student_number,
                given_name=parts[0],
                family_name=parts[1] if len(parts) > 1 else None,
                email=email,
                now=int(time.time()),
            )
        except Conflict:
            fail("a user with that username or student number exists", 1, as_json)

    svc.run(action)
    emit(
        {"username": username, "name": name, "role": role, "student_number": student_number},
        as_json,
        lambda d: out.print(f"added {d['role']} [bold]{d['username']}[/]"),
    )


def _account_command(username: str, by: str, as_json: bool, enable: bool) -> None:
    from campusid.idp import accounts
    from campusid.idp.events import Events

    svc = Services(as_json=as_json)

    async def action(svc: Services):
        events = Events(svc.store)
        try:
            if enable:
                return await accounts.enable(svc.store, events, username, by=by)
            return await accounts.disable(svc.store, events, username, by=by, now=int(time.time()))
        except accounts.AccountError as exc:
            fail(str(exc), 1, as_json)

    change = svc.run(action)

    def human(data: dict) -> None:
        state = "disabled" if data["disabled"] else "enabled"
        if not data["changed"]:
            out.print(f"[bold]{data['username']}[/] was {state} already")
        elif data["disabled"]:
            out.print(
                f"disabled [bold]{data['username']}[/]: {data['sessions_ended']} session(s) ended, "
                f"{data['grants_revoked']} grant(s) revoked"
            )
        else:
            out.print(f"enabled [bold]{data['username']}[/]")

    emit(change.as_json(), as_json, human)


@users_app.command("disable")
def users_disable(username: str, by: AdminOpt, as_json: JsonOpt = False):
    """Disable an account: it cannot sign in; its sessions end and its tokens are revoked at once."""
    _account_command(username, by, as_json, enable=False)


@users_app.command("enable")
def users_enable(username: str, by: AdminOpt, as_json: JsonOpt = False):
    """Let a disabled account sign in again."""
    _account_command(username, by, as_json, enable=True)


@users_app.command("mfa-reset")
def users_mfa_reset(
    username: str,
    by: Annotated[str, typer.Option(help="The admin who resets the factors (audited).")],
    as_json: JsonOpt = False,
):
    """Remove an account's second factors and recovery codes (a lost phone); audited."""
    from campusid.idp import accounts
    from campusid.idp.events import Events

    svc = Services(as_json=as_json)

    async def action(svc: Services):
        try:
            return await accounts.mfa_reset(svc.store, Events(svc.store), username, by=by)
        except accounts.AccountError as exc:
            fail(str(exc), 1, as_json)

    reset = svc.run(action)

    def human(data: dict) -> None:
        out.print(f"reset [bold]{data['username']}[/]: {data['factors_removed']} factor(s) removed")

    emit(reset.as_json(), as_json, human)


@users_app.command("list")
def users_list(as_json: JsonOpt = False):
    """List users (never their password hashes)."""
    from campusid.idp.admin.roles import list_users

    rows = Services(as_json=as_json).run(lambda svc: list_users(svc.store))

    def human(data):
        table = Table("username", "name", "role", "student number", "state", "from")
        for u in data["users"]:
            state = "disabled" if u["disabled"] else "active"
            table.add_row(u["username"], u["name"], u["role"], u["student_number"] or "", state, u["source"])
        out.print(table)

    emit({"users": rows}, as_json, human)


# -- directory --------------------------------------------------------------------------------
def _directory(cfg: Settings, as_json: bool):
    from campusid.idp.directory import Directory, DirectoryMissing

    if cfg.directory is None:
        fail(
            "no directory is configured: set CAMPUSID_LDAP_URL and CAMPUSID_LDAP_USER_BASE (docs/directory.md)",
            2,
            as_json,
        )
    try:
        return Directory(cfg.directory)
    except DirectoryMissing as exc:
        fail(str(exc), 2, as_json)


@directory_app.command("check")
def directory_check(
    username: str,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Also bind as the user with the password read from stdin.")
    ] = False,
    as_json: JsonOpt = False,
):
    """Connect, bind as the service account, find USERNAME and show the mapped claims and role."""
    from campusid.idp.directory import DirectoryUnavailable

    cfg = settings()
    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else None
    directory = _directory(cfg, as_json)

    async def check():
        person = await directory.lookup(username)
        if person is None:
            return None, "no entry"
        if password is not None and await directory.authenticate(username, password) is None:
            return person, "refused"
        return person, "ok"

    try:
        person, outcome = asyncio.run(check())
    except DirectoryUnavailable as exc:
        fail(f"the directory cannot be reached: {exc}", 3, as_json)
    finally:
        directory.close()
    if outcome == "no entry":
        fail(
            f"no single entry under {cfg.directory.user_base} matches {cfg.directory.user_filter} for {username!r}",
            1,
            as_json,
        )
    if outcome == "refused":
        fail(f"the directory refused the password of {person.dn}", 1, as_json)
    data = {"username": person.user.username, "dn": person.dn, "role": person.user.role, "claims": person.claims}

    def human(data: dict) -> None:
        out.print(f"[bold]{data['username']}[/] is {data['dn']} (role {data['role']})", highlight=False)
        for name, value in data["claims"].items():
            out.print(f"  {name}: {value if value is not None else '-'}", highlight=False)

    emit(data, as_json, human)


@directory_app.command("sync")
def directory_sync(as_json: JsonOpt = False):
    """Disable the local copies of people gone from the directory (sessions end, tokens are revoked)."""
    from campusid.idp import directory as dir_mod
    from campusid.idp.events import Events

    svc = Services(as_json=as_json)
    directory = _directory(svc.settings, as_json)

    def progress(count: int) -> None:
        if not as_json:
            err.print(f"read {count} directory entries", highlight=False)

    async def action(svc: Services) -> dict:
        return await dir_mod.sync(directory, svc.store, Events(svc.store), int(time.time()), progress)

    try:
        result = svc.run(action)
    finally:
        directory.close()

    def human(data: dict) -> None:
        out.print(f"checked {data['checked']} directory account(s); disabled {len(data['disabled'])}", highlight=False)
        for name in data["disabled"]:
            out.print(f"  disabled [bold]{name}[/]", highlight=False)
        for message in data["errors"]:
            err.print(f"[bold red]error:[/] {message}", highlight=False)

    emit(result, as_json, human)
    if result["errors"]:
        raise typer.Exit(1)


# -- apps -------------------------------------------------------------------------------------
def _app_human(data: dict) -> None:
    out.print(
        f"[bold]{data['name']}[/]  client_id={data['client_id']}  type={data['type']}  state=[bold]{data['state']}[/]"
    )
    out.print(f"  redirect URIs: {', '.join(data['redirect_uris'])}")
    out.print(f"  scopes: {' '.join(data['scopes'])}  granted: {' '.join(data['granted_scopes']) or '-'}")
    if data.get("grant_types") or data.get("granted_grant_types"):
        asked, granted = " ".join(data["grant_types"]) or "-", " ".join(data["granted_grant_types"]) or "-"
        out.print(f"  extra grant types asked: {asked}  granted: {granted}")
    if data.get("require_mfa"):
        out.print("  every sign-in uses a second factor (--require-mfa)")
    if data.get("post_logout_redirect_uris"):
        out.print(f"  post-logout redirect URIs: {', '.join(data['post_logout_redirect_uris'])}")
    if data.get("backchannel_logout_uri"):
        out.print(f"  back-channel logout URI: {data['backchannel_logout_uri']}")
    if data.get("client_secret"):
        out.print(f"  client secret (shown once, store it on your server): {data['client_secret']}")
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


@apps_app.command("create")
def apps_create(
    name: Annotated[str, typer.Option()],
    type_: Annotated[str, typer.Option("--type", help="web or native.")],
    redirect_uri: Annotated[list[str], typer.Option("--redirect-uri", help="Once per URI.")],
    owner: Annotated[str, typer.Option(help="Username of the developer who owns the app.")],
    scope: Annotated[list[str] | None, typer.Option("--scope", help="Once per scope.")] = None,
    description: Annotated[str, typer.Option()] = "",
    sector_identifier_uri: Annotated[str | None, typer.Option()] = None,
    client_id: Annotated[str | None, typer.Option(help="Choose the client_id (default: generated).")] = None,
    grant_type: Annotated[
        list[str] | None, typer.Option("--grant-type", help="Ask the review for a grant type: device_code.")
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


@apps_app.command("edit")
def apps_edit(
    client_id: str,
    name: Annotated[str | None, typer.Option()] = None,
    redirect_uri: Annotated[list[str] | None, typer.Option("--redirect-uri")] = None,
    scope: Annotated[list[str] | None, typer.Option("--scope")] = None,
    description: Annotated[str | None, typer.Option()] = None,
    grant_type: Annotated[list[str] | None, typer.Option("--grant-type", help="device_code")] = None,
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
        }
        given = {k: v for k, v in changes.items() if v is not None}
        return await svc.apps.propose_revision(client_id, actor=None, **{**current, **given})

    _run_app(as_json, action)


@apps_app.command("submit")
def apps_submit(client_id: str, as_json: JsonOpt = False):
    """Submit a draft or rejected app for review."""
    _run_app(as_json, lambda svc: svc.apps.submit(client_id))


@apps_app.command("approve")
def apps_approve(
    client_id: str,
    by: Annotated[str, typer.Option(help="The admin who approves (never the owner).")],
    grant_scope: Annotated[list[str] | None, typer.Option("--grant-scope", help="Sensitive scope granted.")] = None,
    grant_type: Annotated[
        list[str] | None,
        typer.Option("--grant-type", help="Grant type granted beyond the code flow: device_code (RFC 8628)."),
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


@apps_app.command("reject")
def apps_reject(
    client_id: str,
    by: Annotated[str, typer.Option()],
    feedback: Annotated[str, typer.Option(help="What the developer must change.")],
    as_json: JsonOpt = False,
):
    """Reject an app under review, with feedback."""
    _run_app(as_json, lambda svc: svc.apps.reject(client_id, by, feedback))


@apps_app.command("activate")
def apps_activate(client_id: str, as_json: JsonOpt = False):
    """Activate an approved app: it may now use the authorization endpoint."""
    _run_app(as_json, lambda svc: svc.apps.activate(client_id))


@apps_app.command("suspend")
def apps_suspend(client_id: str, by: AdminOpt, as_json: JsonOpt = False):
    """Suspend an active app."""
    _run_app(as_json, lambda svc: svc.apps.suspend(client_id, by))


@apps_app.command("reinstate")
def apps_reinstate(client_id: str, by: AdminOpt, as_json: JsonOpt = False):
    """Reinstate a suspended app."""
    _run_app(as_json, lambda svc: svc.apps.reinstate(client_id, by))


@apps_app.command("show")
def apps_show(client_id: str, as_json: JsonOpt = False):
    """Show an app with its review history."""
    _run_app(as_json, lambda svc: svc.apps.show(client_id))


@apps_app.command("rotate-secret")
def apps_rotate_secret(client_id: str, as_json: JsonOpt = False):
    """Replace a web app's secret; the new one is printed this once."""

    async def action(svc):
        secret = await svc.apps.rotate_secret(client_id)
        return {**await svc.apps.show(client_id), "client_secret": secret}

    _run_app(as_json, action)


@apps_app.command("list")
def apps_list(state: Annotated[str | None, typer.Option()] = None, as_json: JsonOpt = False):
    """List apps, optionally in one state."""

    async def action(svc: Services) -> list[dict]:
        return [await svc.apps.show(c.client_id) for c in await svc.store.clients(state=state)]

    rows = Services(as_json=as_json).run(action)
    for row in rows:
        row.pop("history")

    def human(data):
        table = Table("client_id", "name", "type", "state", "owner")
        for a in data["apps"]:
            table.add_row(a["client_id"], a["name"], a["type"], a["state"], a["owner"] or "")
        out.print(table)

    emit({"apps": rows}, as_json, human)


# -- keys, db, records ------------------------------------------------------------------------
async def _loaded_keys(svc: Services):
    """The key manager with its keys loaded (created if there are none). A CAMPUSID_SECRET_KEY
    that cannot open them (WrongSecretKey, a StoreError) ends the command with status 2."""
    from campusid.idp.keys import KeyManager

    cfg = svc.settings
    keys = KeyManager(svc.store, cfg.secret_key, cfg.jwks_max_age, cfg.max_token_lifetime)
    await keys.load()
    return keys


@keys_app.command("rotate")
def keys_rotate(as_json: JsonOpt = False):
    """Publish the next signing keys now; they sign after the JWKS cache lifetime."""

    async def action(svc: Services) -> dict:
        from campusid.idp import events as ev

        keys = await _loaded_keys(svc)
        added = await keys.rotate()
        await ev.Events(svc.store).record(ev.KEY_ROTATED, detail="by hand: " + ", ".join(k["kid"] for k in added))
        return {"added": added, "keys": keys.describe()}

    emit(
        Services(as_json=as_json).run(action),
        as_json,
        lambda d: [
            out.print(
                f"published {k['kid']} ({k['alg']}), signing from "
                f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(k['signs_from']))}Z"
            )
            for k in d["added"]
        ],
    )


@keys_app.command("list")
def keys_list(as_json: JsonOpt = False):
    """List signing keys (public information only)."""

    async def action(svc: Services) -> dict:
        return {"keys": (await _loaded_keys(svc)).describe()}

    emit(Services(as_json=as_json).run(action), as_json)


@db_app.command("upgrade")
def db_upgrade(as_json: JsonOpt = False):
    """Create or migrate the database to the newest schema."""
    from campusid.idp.store.db import StoreError, make_engine, upgrade

    cfg = settings()
    engine = make_engine(cfg.database_url)
    try:
        revision = upgrade(engine, cfg.data_dir)
    except StoreError as exc:
        fail(str(exc), 2, as_json)
    finally:
        engine.dispose()
    emit({"revision": revision}, as_json, lambda d: out.print(f"database at revision {d['revision']}"))


@db_app.command("purge")
def db_purge(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would go; delete nothing.")] = False,
    as_json: JsonOpt = False,
):
    """Delete what can never be used again (expired sessions, interactions, codes, grants, refresh
    token families, device codes; events past CAMPUSID_EVENTS_RETENTION_DAYS), in small batches."""
    from campusid.idp import housekeeping

    async def action(svc: Services) -> dict:
        return await housekeeping.purge(svc.store, svc.settings, int(time.time()), dry_run=dry_run)

    purged = Services(as_json=as_json).run(action)
    verb = "would purge" if dry_run else "purged"
    emit(
        {"purged": purged, "dry_run": dry_run},
        as_json,
        lambda d: out.print(f"{verb}: " + ", ".join(f"{n} {kind}" for kind, n in d["purged"].items())),
    )


# -- events -----------------------------------------------------------------------------------
EVENTS_MAX_LIMIT = 1000


def _rfc3339(value: str, as_json: bool) -> int:
    """An RFC 3339 date-time (with its offset, as RFC 3339 5.6 requires) as Unix seconds."""
    from datetime import datetime

    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None or "T" not in value.upper():
        fail(f"--since {value!r} is not an RFC 3339 date-time; write it like 2026-01-31T08:00:00Z", 2, as_json)
    return int(parsed.timestamp())


def _event_json(event) -> dict:
    return {
        "id": event.id,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(event.at)),
        "type": event.type,
        "username": event.username,
        "client_id": event.client_id,
        "ip": event.ip,
        "detail": event.detail,
    }


@events_app.command("list")
def events_list(
    user: Annotated[str | None, typer.Option("--user", help="Only this username's events.")] = None,
    client: Annotated[str | None, typer.Option("--client", help="Only this app's (client_id) events.")] = None,
    type_: Annotated[str | None, typer.Option("--type", help="Only events of this type.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="Only events at or after this RFC 3339 time.")] = None,
    limit: Annotated[int, typer.Option("--limit", help=f"At most this many (1-{EVENTS_MAX_LIMIT}).")] = 50,
    before: Annotated[int | None, typer.Option("--before", help="Only events older than this id (next page).")] = None,
    as_json: JsonOpt = False,
):
    """Security events, newest first; filters combine (all must match)."""
    from campusid.idp.events import TYPES, as_filter

    if not 1 <= limit <= EVENTS_MAX_LIMIT:
        fail(f"--limit must be between 1 and {EVENTS_MAX_LIMIT}, not {limit}", 2, as_json)
    if type_ is not None and type_ not in TYPES:
        fail(f"--type {type_!r} is not an event type; the types are: {', '.join(sorted(TYPES))}", 2, as_json)
    if before is not None and not 1 <= before < 2**62:
        fail("--before must be a positive event id", 2, as_json)
    since_at = _rfc3339(since, as_json) if since is not None else None
    try:
        user, client = as_filter(user), as_filter(client)
    except ValueError as exc:
        fail(str(exc), 2, as_json)

    async def action(svc: Services) -> dict:
        found = await svc.store.events(
            username=user, client_id=client, type=type_, since=since_at, before_id=before, limit=limit
        )
        return {"events": [_event_json(e) for e in found]}

    def human(data: dict) -> None:
        # one line per event, tab-separated: whole values, ready for grep and cut
        columns = ("id", "time", "type", "username", "client_id", "ip", "detail")
        print("\t".join(columns))
        for e in data["events"]:
            print("\t".join("-" if e[k] in (None, "") else str(e[k]) for k in columns))

    emit(Services(as_json=as_json).run(action), as_json, human)


@records_app.command("import")
def records_import(file: Path, as_json: JsonOpt = False):
    """Import grades from CSV: every row is checked first; all rows or none are imported."""
    from campusid.records.importer import COLUMNS, import_csv

    try:
        data = file.read_bytes()
    except OSError as exc:
        fail(f"cannot read {file}: {exc.strerror}", 2, as_json)
    report = Services(as_json=as_json).run(lambda svc: import_csv(svc.store, data))
    body = {"imported": report.imported, "rows": report.rows, "errors": report.errors}
    if not report.ok:
        if as_json:
            print(json.dumps(body), file=sys.stderr)
        else:
            err.print(
                f"[bold red]nothing imported:[/] {len(report.errors)} row(s) rejected (columns: {','.join(COLUMNS)})"
            )
            for e in report.errors[:50]:
                err.print(f"  line {e['line']}: {e['error']}", markup=False, highlight=False)
        raise typer.Exit(1)
    emit(body, as_json, lambda d: out.print(f"imported {d['imported']} grade(s)"))


# -- serving ----------------------------------------------------------------------------------
def _serve(cfg: Settings, host: str, port: int, workers: int) -> None:
    """One way to serve, whatever the number of workers: uvicorn builds the app with
    `campusid.idp.asgi:app_factory` from the environment, in this process (one worker) or in each
    worker process under uvicorn's supervisor, which restarts a worker that dies and stops them
    gracefully on SIGTERM/SIGINT."""
    import uvicorn

    if workers > 1:
        if not cfg.redis_url:
            _warn(
                cfg,
                "several workers without CAMPUSID_REDIS_URL keep separate rate-limit "
                "counters, so each limit is multiplied by the number of workers",
            )
        if cfg.database_url.startswith("sqlite"):
            _warn(cfg, "several workers on SQLite share one file; use PostgreSQL to scale out")
    # The factory reads the settings from the environment; the issuer's default depends on --port.
    os.environ["CAMPUSID_ISSUER"] = cfg.issuer.canonical
    log_options = {"log_config": _logs.configure("json")} if cfg.log_format == "json" else {}
    uvicorn.run(
        "campusid.idp.asgi:app_factory",
        factory=True,
        workers=workers,
        host=host,
        port=port,
        proxy_headers=False,  # X-Forwarded-For is read by the app, from trusted proxies only
        server_header=False,
        log_level="warning",
        access_log=False,
        **log_options,
    )


def _warn(cfg: Settings, message: str) -> None:
    if cfg.log_format == "json":
        logging.getLogger("campusid.cli").warning(message)
    else:
        err.print(f"[yellow]warning:[/] {message}")


class _Terminated(Exception):
    """SIGTERM, raised where the process is, so that what serve set up is undone first."""


def _raise_terminated(signum, frame) -> None:
    raise _Terminated()


def _figures_in_memory() -> None:
    """One worker's figures stay in its memory (idp/metrics.py): no multiprocess directory, not
    even one inherited from the environment. Before anything imports prometheus-client."""
    os.environ.pop(MULTIPROC_ENV, None)


@contextlib.contextmanager
def _metrics_dir(workers: int):
    """Where this serve run's figures live (idp/metrics.py). One worker keeps them in its memory:
    prometheus-client's plain values, with no file to write on each update (a third of the
    figures' cost per request, bench/README.md "Metrics on and off"). Several workers count in
    files of their own under a fresh private directory (multiprocess mode), set before anything
    imports prometheus-client and removed when serving ends; a SIGTERM before uvicorn's supervisor
    takes over the signals is raised here, so that the directory is removed first, and then ends
    the process as before."""
    if workers <= 1:
        _figures_in_memory()
        yield None
        return
    path = tempfile.mkdtemp(prefix="campusid-metrics-")  # mode 0700
    os.environ[MULTIPROC_ENV] = path
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    terminated = False
    try:
        yield path
    except _Terminated:
        terminated = True
    finally:
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(path, ignore_errors=True)
        signal.signal(signal.SIGTERM, previous)
    if terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)


def _early_logging() -> None:
    """JSON log lines from the start when CAMPUSID_LOG_FORMAT=json (a bad value is reported by
    the settings, as a clear error)."""
    try:
        fmt = log_format(os.environ.get("CAMPUSID_LOG_FORMAT"))
    except SettingsError:
        return
    if fmt == "json":
        _logs.configure("json")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    workers: Annotated[int, typer.Option(help="Worker processes (share the database; use Redis for limits).")] = 1,
):
    """Serve the OpenID Provider."""
    _early_logging()
    with _metrics_dir(workers):
        svc = Services(port)
        svc.run(_loaded_keys)  # the keys exist and this CAMPUSID_SECRET_KEY opens them
        cfg = svc.settings
        banner = f"campusid serving {cfg.issuer.display} on http://{host}:{port} (database: {cfg.database_url.split('://')[0]})"
        if cfg.log_format == "json":
            logging.getLogger("campusid.cli").info(banner)
        else:
            err.print(banner, highlight=False)
        _serve(cfg, host, port, workers)


@app.command()
def demo(
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    as_json: JsonOpt = False,
):
    """Serve with demo users, grades and two active clients, printed at start."""
    _figures_in_memory()  # one worker
    from campusid.idp.demo import seed

    svc = Services(port)
    svc_cfg = svc.settings

    async def action(svc: Services) -> dict:
        await _loaded_keys(svc)
        return await seed(svc.store, svc.passwords, svc_cfg.issuer.canonical, int(time.time()))

    info = svc.run(action)
    if as_json:
        print(json.dumps(info), flush=True)
    else:
        out.print(f"[bold]campusid demo[/] at {svc_cfg.issuer.display}  (data: {svc_cfg.data_dir})")
        users = Table("username", "password", "name", "role", "student number", title="Demo users")
        for u in info["users"]:
            users.add_row(u["username"], u["password"], u["name"], u["role"], u["student_number"] or "")
        out.print(users)
        clients = Table("client_id", "type", "redirect URIs", title="Active clients")
        for c in info["clients"]:
            clients.add_row(c["client_id"], c["type"], Text("\n".join(c["redirect_uris"]), overflow="fold"))
        out.print(clients)
        # A secret is printed whole on a line of its own: a table cell would cut or fold it to the
        # terminal's width, and a folded secret cannot be copied.
        for c in info["clients"]:
            if c.get("client_secret"):
                out.print(f"Secret of {c['client_id']} (new at each start):", style="bold")
                out.print(c["client_secret"], soft_wrap=True, highlight=False, markup=False)
        out.print(f"Discovery: {svc_cfg.issuer.canonical}/.well-known/openid-configuration   (Ctrl+C stops)")
    sys.stdout.flush()
    _serve(svc_cfg, host, port, 1)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
