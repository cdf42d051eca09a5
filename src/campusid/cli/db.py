"""`campusid db`: migrate the database, purge what can never be used again."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from campusid.cli.common import JsonOpt, Services, emit, fail, out, settings

app = typer.Typer(no_args_is_help=True, help="The database.")


@app.command("upgrade")
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
    emit({"revision": revision}, as_json, lambda d: out.print(f"database at revision {d['revision']}", markup=False))


@app.command("purge")
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
        lambda d: out.print(f"{verb}: " + ", ".join(f"{n} {kind}" for kind, n in d["purged"].items()), markup=False),
    )
