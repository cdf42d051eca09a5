"""`campusid users`: add a local account, list them, disable, enable, reset the second factors."""

from __future__ import annotations

import sys
import time
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from campusid.cli.common import AdminOpt, JsonOpt, Services, emit, fail, out, say

app = typer.Typer(no_args_is_help=True, help="Manage users.")


@app.command("add")
def users_add(
    username: str,
    name: Annotated[str, typer.Option(help="Display name (the name claim), as the person writes it.")],
    given_name: Annotated[str | None, typer.Option(help="Given name (given_name), stored as given.")] = None,
    family_name: Annotated[str | None, typer.Option(help="Family name (family_name), stored as given.")] = None,
    email: Annotated[str | None, typer.Option(help="Email address (email).")] = None,
    student_number: Annotated[str | None, typer.Option(help="Student number (students).")] = None,
    role: Annotated[str, typer.Option(help="student, developer or admin.")] = "student",
    password_stdin: Annotated[bool, typer.Option("--password-stdin", help="Read the password from stdin.")] = False,
    as_json: JsonOpt = False,
):
    """Add a user; the password is read from standard input (never from the command line)."""
    from campusid.idp import accounts
    from campusid.idp.accounts import rules

    if role not in rules.ROLES:
        fail(f"--role must be one of {', '.join(rules.ROLES)}", 2, as_json)
    if not password_stdin:
        fail("give --password-stdin and pipe the password in (passwords never go on the command line)", 2, as_json)
    password = sys.stdin.readline().rstrip("\r\n")
    # The given and family names are what the options say, never guessed from --name: a name
    # need not have a space ("王小明"), nor put the given name first.
    user = {
        "username": username,
        "name": name,
        "role": role,
        "student_number": student_number,
        "given_name": given_name,
        "family_name": family_name,
        "email": email,
    }
    try:  # the rules before the database is opened; add_user checks them again
        rules.check_new_user(password=password, **user)
    except accounts.InvalidAccount as exc:
        fail(str(exc), 2, as_json)
    svc = Services(as_json=as_json)

    async def action(svc: Services) -> None:
        try:
            await accounts.add_user(svc.store, svc.passwords, password=password, now=int(time.time()), **user)
        except accounts.Taken as exc:
            fail(str(exc), 1, as_json)

    svc.run(action)
    emit(user, as_json, lambda d: say(f"added {d['role']} ", (d["username"], "bold")))


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
            say((data["username"], "bold"), f" was {state} already")
        elif data["disabled"]:
            ended = f": {data['sessions_ended']} session(s) ended, {data['grants_revoked']} grant(s) revoked"
            say("disabled ", (data["username"], "bold"), ended)
        else:
            say("enabled ", (data["username"], "bold"))

    emit(change.as_json(), as_json, human)


@app.command("disable")
def users_disable(username: str, by: AdminOpt, as_json: JsonOpt = False):
    """Disable an account: it cannot sign in; its sessions end and its tokens are revoked at once."""
    _account_command(username, by, as_json, enable=False)


@app.command("enable")
def users_enable(username: str, by: AdminOpt, as_json: JsonOpt = False):
    """Let a disabled account sign in again."""
    _account_command(username, by, as_json, enable=True)


@app.command("mfa-reset")
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
        say("reset ", (data["username"], "bold"), f": {data['factors_removed']} factor(s) removed")

    emit(reset.as_json(), as_json, human)


@app.command("list")
def users_list(as_json: JsonOpt = False):
    """List users (never their password hashes)."""
    from campusid.idp.admin.roles import list_users

    rows = Services(as_json=as_json).run(lambda svc: list_users(svc.store))

    def human(data):
        table = Table("username", "name", "role", "student number", "state", "from")
        for u in data["users"]:
            state = "disabled" if u["disabled"] else "active"
            row = (u["username"], u["name"], u["role"], u["student_number"] or "", state, u["source"])
            table.add_row(*map(Text, row))  # cells as they are: a str cell would be read as markup
        out.print(table)

    emit({"users": rows}, as_json, human)
