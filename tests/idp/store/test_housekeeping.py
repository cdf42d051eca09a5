"""Housekeeping: the purge deletes what can never be used again and nothing else, in bounded
batches through indexes; one worker at a time holds the housekeeping lock; `campusid db purge`."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest
from sqlalchemy import text

from campusid.idp import housekeeping
from campusid.idp.store.db import make_engine
from campusid.idp.store.janitor import (
    BUDGET,
    CHECKPOINT_EVERY,
    FIRST_BATCH,
    KINDS,
    MAX_BATCH,
    MIN_BATCH,
    next_batch,
)
from campusid.idp.store.postgres import PostgresStore
from tests.conftest import run_cli
from tests.idp.conftest import NATIVE_REDIRECT
from tests.idp.helpers import auth_params, callback_params, code_exchange, login_through_pages, run

DAY = 86400
BIG = 100_000


# -- seeding rows straight into the tables -------------------------------------------------------
def seed(url: str, table: str, columns: tuple[str, ...], rows) -> None:
    """Insert `rows` into `table` as fast as the database takes them (COPY on PostgreSQL)."""
    engine = make_engine(url)
    try:
        raw = engine.raw_connection()
        try:
            cur = raw.cursor()
            if url.startswith("postgresql"):
                with cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
            else:
                marks = ", ".join("?" for _ in columns)
                cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)  # noqa: S608
            raw.commit()
        finally:
            raw.close()
    finally:
        engine.dispose()


def count(url: str, sql: str, **params) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(text(sql), params).scalar_one()
    finally:
        engine.dispose()


SESSION_COLS = ("id_hash", "user_id", "auth_time", "created_at", "expires_at", "sid", "amr", "acr")
INTERACTION_COLS = ("id_hash", "kind", "params", "created_at", "expires_at")
GRANT_COLS = (
    "id",
    "code_hash",
    "client_id",
    "user_id",
    "redirect_uri",
    "code_challenge",
    "scope",
    "auth_time",
    "created_at",
    "code_expires_at",
    "code_used_at",
)
REFRESH_COLS = ("token_hash", "grant_id", "created_at", "expires_at", "used_at")
EVENT_COLS = ("at", "type", "username", "detail")


def seed_expired(url: str, user_id: str, client_id: str, now: int, n: int, prefix: str = "x") -> None:
    """`n` expired sessions, interactions, spent grants (each with one expired refresh token),
    n // 100 codes that expired unredeemed and n // 200 events past retention."""
    old = now - 40 * DAY
    seed(
        url,
        "sessions",
        SESSION_COLS,
        ((f"{prefix}s{i}", user_id, old, old, now - 100 - i % 1000, f"{prefix}sid{i}", "pwd", "a") for i in range(n)),
    )
    seed(
        url,
        "interactions",
        INTERACTION_COLS,
        ((f"{prefix}i{i}", "authorize", "{}", old, now - 1 - i % 5000) for i in range(n)),
    )
    grant = (client_id, user_id, NATIVE_REDIRECT, "c", "openid", old, old)
    seed(
        url,
        "grants",
        GRANT_COLS,
        ((f"{prefix}g{i}", f"{prefix}gc{i}", *grant, old + 60 + i % 7, old + 30) for i in range(n)),
    )
    seed(
        url,
        "refresh_tokens",
        REFRESH_COLS,
        ((f"{prefix}r{i}", f"{prefix}g{i}", old + 30, old + 30 + 30 * DAY, None) for i in range(n)),
    )
    seed(
        url,
        "grants",
        GRANT_COLS,
        ((f"{prefix}u{i}", f"{prefix}uc{i}", *grant, old + 60, None) for i in range(n // 100)),
    )
    seed(url, "events", EVENT_COLS, ((now - 91 * DAY - i, "login_failure", "alice", "") for i in range(n // 200)))


def seed_live_edges(url: str, user_id: str, client_id: str, now: int) -> None:
    """Rows that look old but can still be used; the purge must keep every one of them."""
    grant = (client_id, user_id, NATIVE_REDIRECT, "c", "openid", now - 40 * DAY, now - 40 * DAY)
    seed(
        url,
        "grants",
        GRANT_COLS,
        [
            # a refresh family 40 days old that is still going: its old, used, expired token must stay
            # (presenting it again is a reuse that revokes the family)
            ("live-family", "lc1", *grant, now - 40 * DAY, now - 40 * DAY),
            # a code redeemed a minute ago: its access token is valid for 14 more minutes
            ("fresh-access", "lc2", *grant, now - 60, now - 90),
            # an unredeemed code that is still valid
            ("fresh-code", "lc3", *grant, now + 50, None),
        ],
    )
    seed(
        url,
        "refresh_tokens",
        REFRESH_COLS,
        [
            ("old-used", "live-family", now - 40 * DAY, now - 10 * DAY, now - 20 * DAY),
            ("live-token", "live-family", now - 20 * DAY, now + 10 * DAY, None),
        ],
    )
    seed(url, "sessions", SESSION_COLS, [("live-session", user_id, now, now, now + 3600, "live-sid", "pwd", "a")])
    seed(url, "interactions", INTERACTION_COLS, [("live-interaction", "authorize", "{}", now, now + 600)])
    seed(url, "events", EVENT_COLS, [(now - 89 * DAY, "login_success", "alice", "kept")])


def sign_in(idp, browser) -> tuple[dict, str]:
    """alice signs in to the native app: its tokens, and the browser's session cookie."""
    flow = auth_params(idp.native_id, NATIVE_REDIRECT, scope="openid profile offline_access")
    cb = login_through_pages(browser, idp.issuer, flow, "alice")
    r = browser.post("/oauth/token", data=code_exchange(flow, cb["code"], NATIVE_REDIRECT, idp.native_id))
    assert r.status_code == 200, r.text
    return r.json(), browser.cookies.get("campusid_session")


def single_sign_on(idp, browser) -> bool:
    """The browser's session signs it in again without the login form (a code at once)."""
    flow = auth_params(idp.native_id, NATIVE_REDIRECT, scope="openid profile offline_access")
    r = browser.get("/oauth/authorize", params=flow.params)
    return r.status_code in (302, 303) and "code" in callback_params(r.headers["location"])


def refreshes(idp, browser, refresh_token: str) -> bool:
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": idp.native_id}
    return browser.post("/oauth/token", data=data).status_code == 200


# -- the purge on 100,000 expired rows of each kind ----------------------------------------------
@pytest.mark.serial
@pytest.mark.timeout(900)  # seeding 800,000 rows and a paced purge: a minute or two on a loaded machine
def test_the_purge_deletes_100000_expired_rows_of_each_kind_and_no_live_row(idp, browser):
    url = idp.settings.database_url
    tokens, _ = sign_in(idp, browser)
    now = int(time.time())
    seed_expired(url, idp.student.id, idp.native_id, now, BIG)
    seed_live_edges(url, idp.student.id, idp.native_id, now)

    dry = run(idp.store, housekeeping.purge(idp.store, idp.settings, now, dry_run=True))
    expected = {
        "sessions": BIG,
        "interactions": BIG,
        "grants": BIG,
        "refresh_tokens": BIG,
        "codes": BIG // 100,
        "device_codes": 0,
        "events": BIG // 200,
        "logout_notices": 0,
        "cas_tickets": 0,
        "cas_validations": 0,
    }
    assert dry == expected
    assert count(url, "SELECT count(*) FROM sessions") == BIG + 2  # a dry run deletes nothing

    started = time.monotonic()
    purged = run(idp.store, housekeeping.purge(idp.store, idp.settings, now))
    took = time.monotonic() - started
    assert purged == expected, took
    # every live row is still there
    assert count(url, "SELECT count(*) FROM sessions") == 2
    assert count(url, "SELECT count(*) FROM interactions WHERE id_hash = 'live-interaction'") == 1
    assert count(url, "SELECT count(*) FROM interactions WHERE expires_at <= :now", now=now) == 0
    live_grants = {"live-family", "fresh-access", "fresh-code"}
    left = count(url, "SELECT count(*) FROM grants WHERE id IN ('live-family', 'fresh-access', 'fresh-code')")
    assert left == len(live_grants)
    assert count(url, "SELECT count(*) FROM grants") == len(live_grants) + 1  # and alice's real grant
    assert count(url, "SELECT count(*) FROM refresh_tokens WHERE grant_id = 'live-family'") == 2
    assert count(url, "SELECT count(*) FROM events WHERE detail = 'kept'") == 1
    assert count(url, "SELECT count(*) FROM events WHERE at < :t", t=now - 90 * DAY) == 0
    # the real sign-in goes on: the session still signs in, the refresh token still refreshes
    assert single_sign_on(idp, browser)
    assert refreshes(idp, browser, tokens["refresh_token"])
    # a second run finds nothing
    again = run(idp.store, housekeeping.purge(idp.store, idp.settings, int(time.time())))
    assert again == dict.fromkeys(expected, 0)


def test_a_batch_is_bounded_and_the_purge_goes_on_until_all_are_gone(idp):
    url = idp.settings.database_url
    now = int(time.time())
    seed_expired(url, idp.student.id, idp.native_id, now, 2500)
    store = idp.store
    times = {"now": now, "tokens_before": now - idp.settings.max_token_lifetime}
    one_batch = run(store, store.db.fetch_all(store.janitor._purge_sessions, {"now": now, "after": 0, "batch": 1000}))
    assert len(one_batch) == 1000
    gone = run(store, store.db.fetch_all(store.janitor._purge_refresh_tokens, {**times, "after": 0, "batch": 1000}))
    assert len(gone) == 1000
    purged = run(
        store,
        store.janitor.purge(now=now, tokens_before=times["tokens_before"], events_before=now - 90 * DAY, batch=300),
    )
    assert purged["sessions"] == 1500 and purged["refresh_tokens"] == 1500 and purged["grants"] == 2500
    assert purged["codes"] == 25 and purged["interactions"] == 2500 and purged["events"] == 12


def test_the_next_batch_is_sized_to_the_time_budget():
    assert next_batch(100, BUDGET) == 100  # on budget: the same
    assert next_batch(100, 4 * BUDGET) == 25  # four times too slow: a quarter
    assert next_batch(100, BUDGET / 10) == 200  # ten times faster: at most doubled
    assert next_batch(100, 0.0) == 200
    assert next_batch(MIN_BATCH, 100 * BUDGET) == MIN_BATCH
    assert next_batch(MAX_BATCH, BUDGET / 10) == MAX_BATCH


def test_batches_shrink_when_a_batch_runs_slow_and_the_purge_still_deletes_all_and_no_live_row(idp):
    """Each sessions batch "takes" 10 us a row, then from its fifth batch on 400 us a row (a clock
    the test moves): the batches grow towards the budget, then shrink at once; every expired row
    goes, every live one stays, and the database checkpoints every CHECKPOINT_EVERY and at the end.
    Each batch starts at the expiry where the one before it ended (not at the oldest row again)."""
    url = idp.settings.database_url
    now = int(time.time())
    seed_expired(url, idp.student.id, idp.native_id, now, 3000)
    seed_live_edges(url, idp.student.id, idp.native_id, now)
    store = idp.store
    clock = [0.0]
    sizes: list[int] = []
    calls: list[str] = []
    starts: list[tuple[int, int]] = []  # (the batch's :after, the latest expiry it deleted)
    fetch_all, checkpoint = store.db.fetch_all, store.db.checkpoint

    async def timed_fetch_all(q, values={}):  # noqa: B006
        rows = await fetch_all(q, values)
        if q is store.janitor._purge_sessions:
            sizes.append(values["batch"])
            starts.append((values["after"], max((r[0] for r in rows), default=None)))
            calls.append(("sessions", clock[0]))
            clock[0] += values["batch"] * (10e-6 if len(sizes) <= 4 else 400e-6)
        return rows

    async def counted_checkpoint():
        calls.append(("checkpoint", clock[0]))
        await checkpoint()

    store.db.fetch_all, store.db.checkpoint = timed_fetch_all, counted_checkpoint
    janitor = store.janitor
    janitor.clock = lambda: clock[0]
    janitor.purge_pace = 0.0
    janitor.purge_budget = BUDGET  # SQLite's; PostgreSQL's own is larger
    try:
        purged = run(
            store,
            store.janitor.purge(
                now=now, tokens_before=now - idp.settings.max_token_lifetime, events_before=now - 90 * DAY
            ),
        )
    finally:
        del store.db.fetch_all, store.db.checkpoint, janitor.clock, janitor.purge_pace, janitor.purge_budget
    # 10 us a row: 500 rows make the 5 ms budget, reached by doubling from the first batch
    assert sizes[:3] == [FIRST_BATCH, 2 * FIRST_BATCH, 4 * FIRST_BATCH]
    assert all(abs(size - 500) <= 1 for size in sizes[3:5]), sizes[:5]
    assert sizes[5] == int(BUDGET / 400e-6)  # 400 us a row: 12 rows
    assert set(sizes[6:]) == {int(BUDGET / 400e-6)}
    assert starts[0][0] == 0
    assert [after for after, _ in starts[1:]] == [reached for _, reached in starts[:-1]]
    sessions_end = max(i for i, (call, _) in enumerate(calls) if call == "sessions")
    assert calls[sessions_end + 1][0] == "checkpoint"  # the kind ends with one
    during = [at for call, at in calls[:sessions_end] if call == "checkpoint"]
    assert len(during) >= int(calls[sessions_end][1] / CHECKPOINT_EVERY) - 1 >= 1
    assert all(b - a >= CHECKPOINT_EVERY for a, b in zip([0.0, *during], during, strict=False))
    assert purged["sessions"] == 3000 and purged["interactions"] == 3000 and purged["grants"] == 3000
    assert purged["refresh_tokens"] == 3000 and purged["codes"] == 30 and purged["events"] == 15
    assert count(url, "SELECT count(*) FROM sessions") == 1  # the live one
    assert count(url, "SELECT count(*) FROM interactions WHERE id_hash = 'live-interaction'") == 1
    left = count(url, "SELECT count(*) FROM grants WHERE id IN ('live-family', 'fresh-access', 'fresh-code')")
    assert left == 3
    assert count(url, "SELECT count(*) FROM refresh_tokens WHERE grant_id = 'live-family'") == 2
    assert count(url, "SELECT count(*) FROM events WHERE detail = 'kept'") == 1


@pytest.mark.timeout(300)
def test_db_purge_command_prints_the_counts_and_dry_run_deletes_nothing(idp_env):
    from campusid.idp.settings import load_settings
    from campusid.idp.store import open_store
    from tests.idp.helpers import active_client, make_user

    settings = load_settings(idp_env)
    store = open_store(settings.database_url, settings.data_dir)
    try:
        alice = make_user(store, "alice")
        cid, _ = active_client(store, client_type="native", redirect_uris=[NATIVE_REDIRECT])
    finally:
        store.close()
    seed_expired(settings.database_url, alice.id, cid, int(time.time()), 400)

    dry = json.loads(run_cli(idp_env, "db", "purge", "--dry-run", "--json").stdout)
    counts = {"sessions": 400, "interactions": 400, "grants": 400, "refresh_tokens": 400, "codes": 4}
    quiet = {"device_codes": 0, "events": 2, "logout_notices": 0, "cas_tickets": 0, "cas_validations": 0}
    assert dry == {"purged": {**counts, **quiet}, "dry_run": True}
    assert count(settings.database_url, "SELECT count(*) FROM sessions") == 400
    done = json.loads(run_cli(idp_env, "db", "purge", "--json").stdout)
    assert done == {**dry, "dry_run": False}
    assert count(settings.database_url, "SELECT count(*) FROM sessions") == 0
    human = run_cli(idp_env, "db", "purge")
    assert "purged: 0 sessions" in human.stdout
    bad = run_cli(idp_env, "db", "purge", "--batch", "5", check=False)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


# -- every purge statement and every per-user revoke uses an index -------------------------------
PLANNED = (
    "PURGE_SESSIONS",
    "PURGE_INTERACTIONS",
    "PURGE_REFRESH_TOKENS",
    "PURGE_GRANTS",
    "PURGE_EXPIRED_DEVICE_CODES",
    "PURGE_EVENTS",
    "PURGE_LOGOUT_NOTICES",
    "COUNT_EXPIRED_SESSIONS",
    "COUNT_EXPIRED_INTERACTIONS",
    "COUNT_DEAD_REFRESH_TOKENS",
    "COUNT_DEAD_GRANTS",
    "COUNT_EXPIRED_DEVICE_CODES",
    "COUNT_OLD_EVENTS",
    "COUNT_OLD_LOGOUT_NOTICES",
    "END_USER_SESSIONS",
    "REVOKE_USER_GRANTS",
    "END_USER_REFRESH_TOKENS",
    "END_SESSION_REFRESH_TOKENS",
    "REVOKE_SESSION_GRANTS",
    "ENQUEUE_SESSION_LOGOUT_NOTICES",
    "ENQUEUE_USER_LOGOUT_NOTICES",
    "REVOKE_USER_APP_GRANTS",
    "END_USER_APP_REFRESH_TOKENS",
)
VALUES = {
    "now": 1,
    "tokens_before": 1,
    "events_before": 1,
    "after": 0,
    "batch": 1000,
    "uid": "u",
    "sid": "s",
    "cid": "c",
}


def plans(store) -> dict[str, str]:
    """Each statement's plan as the database shows it (SQLite: EXPLAIN QUERY PLAN; PostgreSQL:
    EXPLAIN with sequential scans turned off, so a scan shows only when no index can serve)."""
    out = {}
    named = {q.name: q for q in store.prepared()}  # the statements' labels, as the plans report them
    if isinstance(store, PostgresStore):
        import asyncpg

        async def explain() -> None:
            conn = await asyncpg.connect(store.db._dsn)
            try:
                await conn.execute("SET enable_seqscan = off")
                for name in PLANNED:
                    q = named[name]
                    # EXPLAIN without ANALYZE: the statement is planned, never run
                    rows = await conn.fetch("EXPLAIN " + q.sql, *q.args(VALUES))
                    out[name] = "\n".join(r[0] for r in rows)
            finally:
                await conn.close()

        asyncio.run(explain())
        return out
    import sqlite3

    conn = sqlite3.connect(store.db.path)
    try:
        for name in PLANNED:
            q = named[name]
            rows = conn.execute("EXPLAIN QUERY PLAN " + q.sql, q.args(VALUES)).fetchall()
            out[name] = "\n".join(r[-1] for r in rows)
    finally:
        conn.close()
    return out


def full_scans(plan: str, postgres: bool) -> list[str]:
    lines = [line.strip() for line in plan.splitlines()]
    if postgres:
        return [line for line in lines if "Seq Scan" in line]
    return [line for line in lines if line.startswith("SCAN ") and " USING " not in line]


def test_every_purge_statement_and_per_user_revoke_uses_an_index(idp):
    postgres = isinstance(idp.store, PostgresStore)
    found = plans(idp.store)
    assert set(found) == set(PLANNED)
    scanning = {name: full_scans(plan, postgres) for name, plan in found.items()}
    assert {name: lines for name, lines in scanning.items() if lines} == {}, found
    index_names = ("ix_", "pk_", "Index", "INDEX", "PRIMARY KEY")
    assert all(any(word in plan for word in index_names) for plan in found.values()), found


BATCH_PURGES = (
    "PURGE_SESSIONS",
    "PURGE_INTERACTIONS",
    "PURGE_REFRESH_TOKENS",
    "PURGE_GRANTS",
    "PURGE_EVENTS",
    "PURGE_LOGOUT_NOTICES",
)


def test_the_purges_batches_and_family_checks_are_never_planned_as_joins(idp):
    """Each batch is deleted by its keys (on PostgreSQL `= ANY(ARRAY(...))`), and the refresh
    tokens' and grants' purge check each candidate's family with one probe of
    ix_refresh_tokens_grant_id, as a subplan. Planned as joins, PostgreSQL read the dead entries a
    purge leaves at an index's low end (the grants' time-ordered key, the families' grant_id) to
    cost them, batch after batch: 30-67 ms of planning a batch at --scale 1, against 2-3 ms of work,
    and whole-table hash joins on stale statistics (housekeeping._OneOf, _none_of)."""
    postgres = isinstance(idp.store, PostgresStore)
    found = plans(idp.store)
    for name in BATCH_PURGES:
        plan = found[name]
        if postgres:
            assert not re.search(r"Join|Nested Loop", plan), plan
            assert "= ANY" in plan, plan
    for name in ("PURGE_REFRESH_TOKENS", "PURGE_GRANTS"):
        plan = found[name]
        assert ("SubPlan" if postgres else "CORRELATED SCALAR SUBQUERY") in plan, plan
        assert "ix_refresh_tokens_grant_id" in plan, plan


# Each statement that finds the grants of a session or of a user: it reads `grants` only through
# ix_grants_user_id_sid, with these of its columns bound by equality (there is no index on sid
# alone, so a session's statements bind its user too).
GRANTS_BY_USER_AND_SID = {
    "REVOKE_SESSION_GRANTS": ("user_id", "sid"),
    "END_SESSION_REFRESH_TOKENS": ("user_id", "sid"),
    "ENQUEUE_SESSION_LOGOUT_NOTICES": ("user_id", "sid"),
    "REVOKE_USER_GRANTS": ("user_id",),
    "END_USER_REFRESH_TOKENS": ("user_id",),
    "ENQUEUE_USER_LOGOUT_NOTICES": ("user_id",),
    "REVOKE_USER_APP_GRANTS": ("user_id",),
    "END_USER_APP_REFRESH_TOKENS": ("user_id",),
}


def grants_reads(plan: str, postgres: bool) -> list[tuple[str, tuple[str, ...]]]:
    """Each read of `grants` in a plan: (the index, or the scan, it goes through; the columns
    bound by equality in its condition)."""
    lines = [line.strip().removeprefix("->").strip() for line in plan.splitlines()]
    reads = []
    for i, line in enumerate(lines):
        if postgres:
            m = re.match(
                r"Seq Scan on grants\b|(?:Index|Index Only) Scan using (\w+) on grants\b"
                r"|Bitmap Index Scan on ((?:ix|pk|uq)_grants\w*)",
                line,
            )
            if m:
                cond = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("Index Cond:") else ""
                reads.append((m.group(1) or m.group(2) or "Seq Scan", tuple(re.findall(r"\((\w+)\)::text = ", cond))))
        else:
            m = re.match(r"(?:SEARCH|SCAN) grants\b(?: USING (?:COVERING )?INDEX (\w+))?(?: \((.*)\))?", line)
            if m:
                reads.append((m.group(1) or "SCAN", tuple(re.findall(r"(\w+)=\?", m.group(2) or ""))))
    return reads


def test_the_grants_of_a_session_or_a_user_are_found_through_one_user_sid_index(idp):
    postgres = isinstance(idp.store, PostgresStore)
    assert set(GRANTS_BY_USER_AND_SID) <= set(PLANNED)
    found = plans(idp.store)
    reads = {name: grants_reads(found[name], postgres) for name in GRANTS_BY_USER_AND_SID}
    expected = {name: [("ix_grants_user_id_sid", columns)] for name, columns in GRANTS_BY_USER_AND_SID.items()}
    assert reads == expected, {name: found[name] for name in GRANTS_BY_USER_AND_SID}


def test_logout_notices_given_up_go_with_the_events_retention_and_no_pending_one_does(idp):
    url = idp.settings.database_url
    now = int(time.time())
    cols = ("client_id", "user_id", "sid", "created_at", "next_at", "attempts", "failed_at")
    old, recent = now - 91 * DAY, now - 89 * DAY
    seed(
        url,
        "logout_notices",
        cols,
        [
            ("web", idp.student.id, "s-old", old, old, 6, old),  # given up 91 days ago: purged
            ("web", idp.student.id, "s-recent", recent, recent, 6, recent),  # given up 89 days ago: kept
            ("web", idp.student.id, "s-pending", old, now + 60, 2, None),  # still being retried: kept
        ],
    )
    store = idp.store
    purged = run(store, store.janitor.purge(now=now, tokens_before=now - 3600, events_before=now - 90 * DAY))
    assert purged["logout_notices"] == 1
    assert count(url, "SELECT count(*) FROM logout_notices WHERE sid = 's-old'") == 0
    assert count(url, "SELECT count(*) FROM logout_notices WHERE sid IN ('s-recent', 's-pending')") == 2


# -- one worker at a time ----------------------------------------------------------------------
def test_one_holder_of_the_housekeeping_lock_across_two_stores_of_one_database(idp):
    from campusid.idp.store.db import store_for

    other = store_for(idp.settings.database_url)  # as another worker (or host) opens it

    async def contend() -> tuple:
        async with idp.store, other:
            async with idp.store.janitor.lock() as first, other.janitor.lock() as second:
                during = (first, second)
            async with other.janitor.lock() as after:
                pass
            # while one worker holds it, another's run skips at once (and deletes nothing)
            async with idp.store.janitor.lock() as held:
                assert held
                skipped = await asyncio.wait_for(
                    housekeeping.run_once(other, idp.ctx.keys, idp.ctx.events, idp.settings), timeout=5
                )
            ran = await housekeeping.run_once(other, idp.ctx.keys, idp.ctx.events, idp.settings)
            ran = (skipped, ran)
        return during, after, ran

    try:
        during, after, ran = asyncio.run(contend())
    finally:
        other.close()
    assert during == (True, False)
    assert after is True
    skipped, done = ran
    assert skipped is None
    assert set(done["purged"]) == set(KINDS) and done["rotated"] == []


def test_purge_settings_are_checked(idp_env):
    for name, value in (
        ("CAMPUSID_PURGE_INTERVAL", "-1"),
        ("CAMPUSID_KEY_ROTATION_DAYS", "soon"),
        ("CAMPUSID_EVENTS_RETENTION_DAYS", "0"),
    ):
        proc = run_cli({**idp_env, name: value}, "db", "purge", check=False)
        assert proc.returncode == 2 and name in proc.stderr and "Traceback" not in proc.stderr


# -- serve purges by itself --------------------------------------------------------------------
@pytest.mark.timeout(300)
def test_serve_purges_every_interval_by_itself(idp_env):
    from campusid.idp.settings import load_settings
    from campusid.idp.store import open_store
    from tests.conftest import start_server
    from tests.idp.helpers import active_client, make_user

    settings = load_settings(idp_env)
    store = open_store(settings.database_url, settings.data_dir)
    try:
        alice = make_user(store, "alice")
        cid, _ = active_client(store, client_type="native", redirect_uris=[NATIVE_REDIRECT])
    finally:
        store.close()
    url = settings.database_url
    server = start_server({**idp_env, "CAMPUSID_PURGE_INTERVAL": "1"})
    try:
        seed_expired(url, alice.id, cid, int(time.time()), 300)  # while it runs: the next run finds them
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and count(url, "SELECT count(*) FROM grants") > 0:
            time.sleep(0.2)
        assert count(url, "SELECT count(*) FROM grants") == 0
        assert count(url, "SELECT count(*) FROM sessions") == 0
        assert count(url, "SELECT count(*) FROM refresh_tokens") == 0
    finally:
        server.stop()
