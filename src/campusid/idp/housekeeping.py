"""Housekeeping: the purge of what can never be used again, and automatic signing-key rotation.

`campusid db purge` runs `purge` once. `campusid serve` runs `run_once` at start and then every
CAMPUSID_PURGE_INTERVAL seconds in each worker (`run_forever`); only the worker that takes the
store's housekeeping lock does anything (a PostgreSQL advisory lock; on SQLite a file lock beside
the database), so across every worker and host one purge or rotation runs at a time. Rotation is
decided under that lock after reading the keys from the database, so of several workers due at
once exactly one adds keys: the others find the new ones.

The rules of what can be deleted are in store/janitor.py; docs/operations.md describes both.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from campusid.idp import events as ev
from campusid.idp.events import Events
from campusid.idp.keys import KeyManager
from campusid.idp.settings import Settings
from campusid.idp.store import Store

log = logging.getLogger("campusid.idp.housekeeping")
DAY = 86400
# With the purge turned off (interval 0) but automatic rotation on, how often serve checks the keys.
ROTATION_CHECK_SECONDS = 3600


async def purge(store: Store, settings: Settings, now: int, *, dry_run: bool = False) -> dict[str, int]:
    """Delete (or count) what can never be used again, in bounded batches; the number per kind."""
    return await store.janitor.purge(
        now=now,
        tokens_before=now - settings.max_token_lifetime,
        events_before=now - settings.events_retention_days * DAY,
        dry_run=dry_run,
    )


async def rotate_keys_if_due(keys: KeyManager, events: Events, settings: Settings) -> list[dict]:
    """When CAMPUSID_KEY_ROTATION_DAYS is set and the newest signing key is at least that old, publish
    the next keys exactly as `campusid keys rotate` does (they sign after CAMPUSID_JWKS_MAX_AGE) and
    record `key_rotated`; the keys added (none when not due)."""
    if settings.key_rotation_days <= 0 or not await keys.due_for_rotation(settings.key_rotation_days * DAY):
        return []
    added = await keys.rotate()
    await events.record(ev.KEY_ROTATED, detail="automatic: " + ", ".join(k["kid"] for k in added))
    log.info("signing keys rotated automatically: %s", ", ".join(k["kid"] for k in added))
    return added


async def run_once(
    store: Store, keys: KeyManager, events: Events, settings: Settings, *, purging: bool = True
) -> dict | None:
    """One housekeeping run if this worker gets the lock (None otherwise): the key check, then the purge."""
    async with store.janitor.lock() as held:
        if not held:
            return None
        rotated = await rotate_keys_if_due(keys, events, settings)
        purged = await purge(store, settings, int(time.time())) if purging else None
    if purged and any(purged.values()):
        log.info("housekeeping purged %s", ", ".join(f"{n} {kind}" for kind, n in purged.items() if n))
    return {"rotated": rotated, "purged": purged}


async def run_forever(
    store: Store,
    keys: KeyManager,
    events: Events,
    settings: Settings,
    sleep: Callable[[float], object] = asyncio.sleep,
) -> None:
    """The lifespan's background task in `serve`: a run at start and one every interval. A run that
    fails is logged and the next one tried at its time (a database that is down is not asked in a
    tight loop)."""
    purging = settings.purge_interval > 0
    interval = settings.purge_interval if purging else ROTATION_CHECK_SECONDS
    while True:
        try:
            await run_once(store, keys, events, settings, purging=purging)
        except Exception:  # noqa: BLE001 - logged; the next run comes at its time
            log.exception("housekeeping failed; it runs again in %s s", interval)
        await sleep(interval)


def wanted(settings: Settings) -> bool:
    """Whether serve runs housekeeping at all (the purge, automatic rotation or both are on)."""
    return settings.purge_interval > 0 or settings.key_rotation_days > 0
