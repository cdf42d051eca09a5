"""`campusid directory`: check what the directory says of a person, and sync the local copies."""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Annotated

import typer

from campusid.cli.common import JsonOpt, Services, emit, err, fail, print_error, say, settings
from campusid.idp.settings import Settings

app = typer.Typer(no_args_is_help=True, help="The university directory (LDAP / Active Directory).")


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


@app.command("check")
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
        say((data["username"], "bold"), f" is {data['dn']} (role {data['role']})", highlight=False)
        for name, value in data["claims"].items():
            say(f"  {name}: {value if value is not None else '-'}", highlight=False)

    emit(data, as_json, human)


@app.command("sync")
def directory_sync(as_json: JsonOpt = False):
    """Disable the local copies of people gone from the directory (sessions end, tokens are revoked)."""
    from campusid.idp import directory as dir_mod
    from campusid.idp.events import Events

    svc = Services(as_json=as_json)
    directory = _directory(svc.settings, as_json)

    def progress(count: int) -> None:
        if not as_json:
            say(f"read {count} directory entries", console=err, highlight=False)

    async def action(svc: Services) -> dict:
        return await dir_mod.sync(directory, svc.store, Events(svc.store), int(time.time()), progress)

    try:
        result = svc.run(action)
    finally:
        directory.close()

    def human(data: dict) -> None:
        say(f"checked {data['checked']} directory account(s); disabled {len(data['disabled'])}", highlight=False)
        for name in data["disabled"]:
            say("  disabled ", (name, "bold"), highlight=False)
        for message in data["errors"]:
            print_error(message)

    emit(result, as_json, human)
    if result["errors"]:
        raise typer.Exit(1)
