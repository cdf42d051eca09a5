"""The janitor: housekeeping's purge, deleting what can never be used again in bounded batches,
and the lock that lets one worker at a time do it (each database's own: sqlite.py, postgres.py).

What can never be used again, kind by kind (times are compared with `now`; `tokens_before` is
`now` minus the longest access/ID token lifetime, so no token minted before it is still valid):
- a session or an interaction past its `expires_at` (every read of one checks `expires_at > now`);
- a refresh token whose whole family (every refresh token of its grant) has expired, and whose
  newest token was minted before `tokens_before` (the access token minted with it has expired
  too). A used token of a live family is kept: presenting it again is a reuse that revokes the
  family (RFC 9700 4.14.2), and that needs the row;
- a grant with no refresh token left whose code expired before `tokens_before`: its code cannot
  be redeemed (RFC 6749 4.1.2) and every access token checked against it has expired. Counted as
  `codes` when its code was never redeemed, else as `grants`;
- a device code past its `expires_at` (store/devices.py), an event older than the retention, and a
  back-channel logout notice given up (`failed_at`) before the same retention (its failure is an event);
- a CAS ticket past its `expires_at` (a service or proxy ticket after its 60 s, used or not; a
  proxy-granting ticket with its session), and the record of a validated CAS ticket whose session
  has expired (single logout is sent only for sessions that are ended, not for those that lapse).

Each DELETE takes a batch of rows, chosen through an index in expiry order from where the batch
before ended (`_dead_from`), and commits on its own. A batch's size follows a time budget (BUDGET,
a few milliseconds), not a row count: each batch's statement is timed, and the next one is sized so
that it would take the budget (`next_batch`), so a batch that ran slow (a busy machine, a costlier
kind of row) is followed by a smaller one. A request that waits for the purge therefore waits about
one budget, whatever the rows cost: on SQLite every write waits for the one write lock a statement
holds, on PostgreSQL the statement competes for the server's time. Every CHECKPOINT_EVERY, and when
a kind is done, the database tidies up what the batches wrote (SQLite: a PASSIVE checkpoint of the
WAL on the purge's own connection, which holds no lock a request waits for, so that the copy of the
batches' pages into the database file, and its fsync, is not left to the commit of whichever
request finds the WAL past `wal_autocheckpoint`). After each batch the purge pauses for `pace`
times as long as the statement (and a checkpoint) took, so it takes at most 1 / (1 + pace) of the
database's (and on SQLite, whose statements run on the server's event loop, of the worker's) time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from sqlalchemy import ColumnElement, and_, bindparam, delete, exists, func, literal_column, or_, select
from sqlalchemy.ext.compiler import compiles

from campusid.idp.store.database import Database, Prepared
from campusid.idp.store.repository import Repository
from campusid.idp.store.schema import (
    cas_tickets,
    cas_validations,
    device_codes,
    events,
    grants,
    interactions,
    logout_notices,
    refresh_tokens,
    sessions,
)

KINDS = (
    "sessions",
    "interactions",
    "grants",
    "refresh_tokens",
    "codes",
    "device_codes",
    "events",
    "logout_notices",
    "cas_tickets",
    "cas_validations",
)
BUDGET = 0.005  # seconds: what one batch's statement should take (what a request may wait behind)
FIRST_BATCH = 100  # rows: the first batch of each kind, before any has been timed
MIN_BATCH = 10
MAX_BATCH = 1000
PACE = 2.0
CHECKPOINT_EVERY = 0.25  # seconds between the purge's own checkpoints (each one an fsync)
MAX_PAUSE = 1.0  # seconds
_NOW, _TOKENS_BEFORE = bindparam("now"), bindparam("tokens_before")
_AFTER, _BATCH = bindparam("after"), bindparam("batch")

_rt, _g, _d = refresh_tokens.c, grants.c, device_codes.c
_sibling = refresh_tokens.alias("sibling")


def _none_of(*where) -> ColumnElement[bool]:
    """NOT EXISTS (a row of `where`), checked row by row: a correlated subquery that stays one.

    Decision: OFFSET 0 keeps PostgreSQL from turning the NOT EXISTS into an anti-join (it never
    pulls up a subquery with an OFFSET; SQLite runs it as written either way). As a join, its
    planner estimates the join by reading both ends of ix_refresh_tokens_grant_id, and a purge of
    old families leaves dead entries there until VACUUM: at --scale 1 (1.67 M purged) planning took
    30-50 ms a batch against 2 ms of work, and with statistics from before the purge it chose a
    hash anti-join over both whole tables (2.8 s a batch). As a subplan, each candidate row is one
    probe of that index and the batch is read in expiry order (bench/README.md, "Growth")."""
    return ~select(literal_column("1")).where(*where).offset(literal_column("0")).exists()


# A refresh token family is live while one of its tokens is unexpired, or was minted so recently
# that the access token minted with it may still be valid.
_DEAD_REFRESH = and_(
    _rt.expires_at <= _NOW,
    _none_of(
        _sibling.c.grant_id == _rt.grant_id,
        or_(_sibling.c.expires_at > _NOW, _sibling.c.created_at > _TOKENS_BEFORE),
    ),
)
_DEAD_GRANT = and_(_g.code_expires_at <= _TOKENS_BEFORE, _none_of(_rt.grant_id == _g.id))


class _OneOf(ColumnElement[bool]):
    """`key IN (chosen)`, chosen a SELECT of keys; on PostgreSQL `key = ANY(ARRAY(chosen))`.

    Decision: PostgreSQL plans `IN (SELECT ...)` as a join of the table with the batch, and to
    cost the join it reads the table's key index from both ends; where keys are time-ordered
    (grants, events) a purge leaves its deleted rows' entries at the low end until VACUUM: at
    --scale 1 the grants' batches took 67 ms to plan against 3 ms to run, slowing as the
    purge went on. As an array of the batch's keys, the DELETE is one index lookup per key, planned
    in 0.2 ms. Compiled once per dialect at start (store/database.py), so no statement cache."""

    inherit_cache = False

    def __init__(self, key, chosen) -> None:
        self.key, self.chosen = key, chosen.scalar_subquery()


@compiles(_OneOf)
def _one_of(element: _OneOf, compiler, **kw) -> str:
    return f"{compiler.process(element.key, **kw)} IN {compiler.process(element.chosen, **kw)}"


@compiles(_OneOf, "postgresql")
def _one_of_array(element: _OneOf, compiler, **kw) -> str:
    return f"{compiler.process(element.key, **kw)} = ANY(ARRAY{compiler.process(element.chosen, **kw)})"


def _dead_from(table, key, column, dead, *returned):
    """DELETE at most :batch rows of `table` that `dead` selects, in `column` order from :after on
    (where the previous batch reached); returns `column` first, for the next batch's :after.

    Decision: each batch starts where the one before ended, not at the oldest row. The entries of
    the rows the batches before deleted stay in `column`'s index until VACUUM (PostgreSQL) and a
    scan from the start reads them all again, batch after batch: at --scale 1 under the token row
    the sessions' purge slowed from 4,500 to 1,400 rows/s as 1.6 M of them piled up."""
    chosen = select(key).where(column >= _AFTER, dead).order_by(column).limit(_BATCH)
    return delete(table).where(_OneOf(key, chosen)).returning(column, *returned)


_sessions, _interactions = sessions.c, interactions.c
_EVENTS_BEFORE = bindparam("events_before")
PURGE_SESSIONS = _dead_from(sessions, _sessions.id_hash, _sessions.expires_at, _sessions.expires_at <= _NOW)
PURGE_INTERACTIONS = _dead_from(
    interactions, _interactions.id_hash, _interactions.expires_at, _interactions.expires_at <= _NOW
)
PURGE_EVENTS = _dead_from(events, events.c.id, events.c.at, events.c.at <= _EVENTS_BEFORE)
# failed_at is the first column of ix_logout_notices_next_at
PURGE_LOGOUT_NOTICES = _dead_from(
    logout_notices, logout_notices.c.id, logout_notices.c.failed_at, logout_notices.c.failed_at <= _EVENTS_BEFORE
)
_cas_t, _cas_v = cas_tickets.c, cas_validations.c
PURGE_CAS_TICKETS = _dead_from(cas_tickets, _cas_t.id_hash, _cas_t.expires_at, _cas_t.expires_at <= _NOW)
PURGE_CAS_VALIDATIONS = _dead_from(cas_validations, _cas_v.id, _cas_v.expires_at, _cas_v.expires_at <= _NOW)
PURGE_REFRESH_TOKENS = _dead_from(refresh_tokens, _rt.token_hash, _rt.expires_at, _DEAD_REFRESH)
PURGE_GRANTS = _dead_from(grants, _g.id, _g.code_expires_at, _DEAD_GRANT, _g.code_used_at)
# An expired device code can never be used again (a bounded batch per call).
PURGE_EXPIRED_DEVICE_CODES = delete(device_codes).where(
    _d.id.in_(select(_d.id).where(_d.expires_at <= _NOW).limit(_BATCH).scalar_subquery())
)

# --dry-run: the same rules, counted (a grant counts when its family is dead, whether or not its
# refresh tokens are still there: the purge deletes them first).
COUNT_EXPIRED_SESSIONS = select(func.count()).select_from(sessions).where(sessions.c.expires_at <= _NOW)
COUNT_EXPIRED_INTERACTIONS = select(func.count()).select_from(interactions).where(interactions.c.expires_at <= _NOW)
COUNT_EXPIRED_DEVICE_CODES = select(func.count()).select_from(device_codes).where(device_codes.c.expires_at <= _NOW)
COUNT_OLD_EVENTS = select(func.count()).select_from(events).where(events.c.at <= bindparam("events_before"))
COUNT_OLD_LOGOUT_NOTICES = (
    select(func.count()).select_from(logout_notices).where(logout_notices.c.failed_at <= bindparam("events_before"))
)
COUNT_EXPIRED_CAS_TICKETS = select(func.count()).select_from(cas_tickets).where(_cas_t.expires_at <= _NOW)
COUNT_EXPIRED_CAS_VALIDATIONS = select(func.count()).select_from(cas_validations).where(_cas_v.expires_at <= _NOW)
COUNT_DEAD_REFRESH_TOKENS = select(func.count()).select_from(refresh_tokens).where(_DEAD_REFRESH)
_family_of_grant = refresh_tokens.alias("family")
COUNT_DEAD_GRANTS = (
    select(_g.code_used_at.is_(None).label("unredeemed"), func.count())
    .where(
        _g.code_expires_at <= _TOKENS_BEFORE,
        ~exists().where(
            _family_of_grant.c.grant_id == _g.id,
            or_(_family_of_grant.c.expires_at > _NOW, _family_of_grant.c.created_at > _TOKENS_BEFORE),
        ),
    )
    .group_by(_g.code_used_at.is_(None))
)


def next_batch(size: int, took: float, budget: float = BUDGET) -> int:
    """The size of the batch after one of `size` rows that took `took` seconds: the size that would
    have taken `budget` at the same cost per row, at most twice `size` (one fast batch on cached
    pages is no proof), within MIN_BATCH..MAX_BATCH."""
    wanted = size * budget / took if took > 0 else MAX_BATCH
    return max(MIN_BATCH, min(MAX_BATCH, 2 * size, int(wanted)))


class Janitor(Repository):
    """Each database's subclass (sqlite.py, postgres.py) supplies `lock`, and may set its own budget."""

    purge_budget = BUDGET
    purge_pace = PACE
    clock = staticmethod(time.monotonic)  # what batches are timed with

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._purge_sessions = db.prepare("PURGE_SESSIONS", PURGE_SESSIONS)
        self._purge_interactions = db.prepare("PURGE_INTERACTIONS", PURGE_INTERACTIONS)
        self._purge_refresh_tokens = db.prepare("PURGE_REFRESH_TOKENS", PURGE_REFRESH_TOKENS)
        self._purge_grants = db.prepare("PURGE_GRANTS", PURGE_GRANTS)
        self._purge_device_codes = db.prepare("PURGE_EXPIRED_DEVICE_CODES", PURGE_EXPIRED_DEVICE_CODES)
        self._purge_events = db.prepare("PURGE_EVENTS", PURGE_EVENTS)
        self._purge_logout_notices = db.prepare("PURGE_LOGOUT_NOTICES", PURGE_LOGOUT_NOTICES)
        self._purge_cas_tickets = db.prepare("PURGE_CAS_TICKETS", PURGE_CAS_TICKETS)
        self._purge_cas_validations = db.prepare("PURGE_CAS_VALIDATIONS", PURGE_CAS_VALIDATIONS)
        self._count_cas_tickets = db.prepare("COUNT_EXPIRED_CAS_TICKETS", COUNT_EXPIRED_CAS_TICKETS)
        self._count_cas_validations = db.prepare("COUNT_EXPIRED_CAS_VALIDATIONS", COUNT_EXPIRED_CAS_VALIDATIONS)
        self._count_sessions = db.prepare("COUNT_EXPIRED_SESSIONS", COUNT_EXPIRED_SESSIONS)
        self._count_interactions = db.prepare("COUNT_EXPIRED_INTERACTIONS", COUNT_EXPIRED_INTERACTIONS)
        self._count_refresh_tokens = db.prepare("COUNT_DEAD_REFRESH_TOKENS", COUNT_DEAD_REFRESH_TOKENS)
        self._count_grants = db.prepare("COUNT_DEAD_GRANTS", COUNT_DEAD_GRANTS)
        self._count_device_codes = db.prepare("COUNT_EXPIRED_DEVICE_CODES", COUNT_EXPIRED_DEVICE_CODES)
        self._count_events = db.prepare("COUNT_OLD_EVENTS", COUNT_OLD_EVENTS)
        self._count_logout_notices = db.prepare("COUNT_OLD_LOGOUT_NOTICES", COUNT_OLD_LOGOUT_NOTICES)

    def lock(self) -> AbstractAsyncContextManager[bool]:
        """`async with store.janitor.lock() as held:` — True in exactly one holder at a time,
        across every worker and host of this database; False at once for the others (never waits)."""
        raise NotImplementedError

    async def _after_batch(self, started: float, size: int, fixed: bool) -> int:
        """Between batches: the next batch's size from this one's statement, then the database's
        checkpoint when the last is CHECKPOINT_EVERY ago, then the requests' turn (of this event
        loop and of the database) for `pace` times as long as both took."""
        took = self.clock() - started
        size = size if fixed else next_batch(size, took, self.purge_budget)
        if self.clock() - self._checkpointed >= CHECKPOINT_EVERY:
            await self._checkpoint()
        await asyncio.sleep(min(MAX_PAUSE, (self.clock() - started) * self.purge_pace))
        return size

    async def _checkpoint(self) -> None:
        await self.db.checkpoint()
        self._checkpointed = self.clock()

    async def _drain(self, q: Prepared, values: dict, batch: int | None) -> int:
        total, size = 0, batch or FIRST_BATCH
        self._checkpointed = self.clock()
        while True:
            started = self.clock()
            n = await self.db.execute(q, {**values, "batch": size})
            total += n
            if n < size:
                await self._checkpoint()
                return total
            size = await self._after_batch(started, size, fixed=batch is not None)

    async def _drain_from(
        self, q: Prepared, values: dict, batch: int | None, tally: Callable[[list], None] | None = None
    ) -> int:
        """Run a RETURNING purge until a batch comes back short, each batch starting at the expiry
        the previous one reached (its first column); how many rows went. `tally` sees each
        batch's returned rows."""
        total, after, size = 0, 0, batch or FIRST_BATCH
        self._checkpointed = self.clock()
        while True:
            started = self.clock()
            got = await self.db.fetch_all(q, {**values, "after": after, "batch": size})
            total += len(got)
            if tally is not None:
                tally(got)
            if len(got) < size:
                await self._checkpoint()
                return total
            after = max(r[0] for r in got)
            size = await self._after_batch(started, size, fixed=batch is not None)

    async def purge_expired_device_codes(self, now: int, batch: int = 1000) -> int:
        """Delete at most `batch` device codes that expired at or before `now`; how many went.
        Call again while it returns `batch`."""
        return await self.db.execute(self._purge_device_codes, {"now": now, "batch": batch})

    async def purge(
        self, *, now: int, tokens_before: int, events_before: int, dry_run: bool = False, batch: int | None = None
    ) -> dict[str, int]:
        """Delete (or, with `dry_run`, count) what can never be used again; the number per kind.
        Batches follow the time budget, or are all of `batch` rows when it is given."""
        times = {"now": now, "tokens_before": tokens_before}
        old = {"events_before": events_before}
        if dry_run:
            dead = {bool(u): n for u, n in await self.db.fetch_all(self._count_grants, times)}
            one = self.db.fetch_one
            return {
                "sessions": (await one(self._count_sessions, {"now": now}))[0],
                "interactions": (await one(self._count_interactions, {"now": now}))[0],
                "grants": dead.get(False, 0),
                "refresh_tokens": (await one(self._count_refresh_tokens, times))[0],
                "codes": dead.get(True, 0),
                "device_codes": (await one(self._count_device_codes, {"now": now}))[0],
                "events": (await one(self._count_events, old))[0],
                "logout_notices": (await one(self._count_logout_notices, old))[0],
                "cas_tickets": (await one(self._count_cas_tickets, {"now": now}))[0],
                "cas_validations": (await one(self._count_cas_validations, {"now": now}))[0],
            }
        counts = {
            "sessions": await self._drain_from(self._purge_sessions, {"now": now}, batch),
            "interactions": await self._drain_from(self._purge_interactions, {"now": now}, batch),
            # a dead family's refresh tokens first: then its grant has none left
            "refresh_tokens": await self._drain_from(self._purge_refresh_tokens, times, batch),
        }
        unredeemed = 0

        def count_unredeemed(rows: list) -> None:
            nonlocal unredeemed
            unredeemed += sum(1 for row in rows if row[1] is None)

        gone = await self._drain_from(self._purge_grants, times, batch, count_unredeemed)
        counts.update(grants=gone - unredeemed, codes=unredeemed)
        counts["device_codes"] = await self._drain(self._purge_device_codes, {"now": now}, batch)
        counts["events"] = await self._drain_from(self._purge_events, old, batch)
        counts["logout_notices"] = await self._drain_from(self._purge_logout_notices, old, batch)
        counts["cas_tickets"] = await self._drain_from(self._purge_cas_tickets, {"now": now}, batch)
        counts["cas_validations"] = await self._drain_from(self._purge_cas_validations, {"now": now}, batch)
        return {kind: counts[kind] for kind in KINDS}
