"""The `campusid` command (usage in the README's CLI section): one module per command group
(users, apps, keys, db, events, records, directory; serve.py has `serve` and `demo`, serving.py
the process plumbing they run the server with), common.py what they share. Management commands
take --json and then print one JSON object on stdout; errors go to stderr with a non-zero exit
and never a traceback. A command imports what it needs when it runs (the store, the web layer,
uvicorn), so that every command starts quickly."""

from __future__ import annotations

import typer

from campusid.cli import apps, db, directory, events, keys, records, serve, users

app = typer.Typer(add_completion=False, no_args_is_help=True, help="campusid: the university's OpenID Provider.")
for group, name in (
    (users, "users"),
    (apps, "apps"),
    (keys, "keys"),
    (db, "db"),
    (records, "records"),
    (events, "events"),
    (directory, "directory"),
):
    app.add_typer(group.app, name=name)
app.command()(serve.serve)
app.command()(serve.demo)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
