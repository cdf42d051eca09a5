"""`campusid events`: the security events (audit trail), filtered, newest first."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from campusid.cli.common import JsonOpt, Services, emit, fail

app = typer.Typer(no_args_is_help=True, help="The security events (audit trail).")
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


@app.command("list")
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
        found = await svc.store.events.list(
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
