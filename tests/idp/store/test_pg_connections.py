"""The PostgreSQL store's connections (store/postgres.py, store/pg_pool.py), against the real
server: bounded, waiters served in order, refused statements keep their connection; a connection
that died (the server terminated it, as a restart does) or was interrupted is never lent again;
a read that met a dead connection is answered on a fresh one, a write is not retried (503); an
unreachable server is StoreUnavailable; a connection idle too long is not lent, and an idle pool
shrinks back to its minimum."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
from sqlalchemy import Integer, bindparam, func, select

from campusid.idp.store import StoreUnavailable, open_store
from campusid.idp.store.pg_pool import ConnectionPool
from campusid.idp.store.postgres import PostgresDatabase

asyncpg = pytest.importorskip("asyncpg")


def _server() -> str:
    url = os.environ.get("CAMPUSID_DATABASE_URL", "")
    if url.startswith(("postgresql", "postgres")):
        return url.replace("postgresql+psycopg://", "postgresql://").rsplit("/", 1)[0]
    return "postgresql://postgres@127.0.0.1:5432"


SERVER = _server()
DSN = SERVER + "/postgres"


@pytest.fixture(scope="module", autouse=True)
def _postgres_up():
    async def probe():
        conn = await asyncpg.connect(DSN, timeout=5)
        await conn.close()

    try:
        asyncio.run(probe())
    except (OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL not reachable at {DSN}: {exc}")


@pytest.fixture
def pg_database(tmp_path):
    """A fresh, migrated database of our own on the server (whatever the suite's backend)."""
    name = f"campusid_t_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(DSN)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    open_store(f"{SERVER}/{name}", tmp_path).close()  # migrates
    yield f"{SERVER}/{name}"
    asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _kill_before_the_loop_notices(dsn: str, pids) -> None:
    """Terminate backends and wait until they are gone, from another connection, synchronously:
    this event loop is blocked meanwhile, so its connections still look open when the next
    statement is sent on one of them (the server restarted while the worker was busy)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid, 10000) FROM unnest(%s::int[]) AS pid", [list(pids)])


def _db(size: int, dsn: str = DSN) -> PostgresDatabase:
    return PostgresDatabase(dsn, pool_min=1, pool_max=size)


def _q(db: PostgresDatabase, name: str, stmt, write: bool | None = None):
    return db.prepare(name, stmt, write=write)


async def _kill(dsn: str, pids) -> None:
    """Terminate backends from another connection and wait until they are gone (PostgreSQL 14+),
    as a server restart ends every connection."""
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute("SELECT pg_terminate_backend(pid, 10000) FROM unnest($1::int[]) AS pid", list(pids))
    finally:
        await conn.close()


def test_many_statements_share_a_bounded_set_of_connections():
    async def main():
        db = _db(3)
        await db.start()
        q = _q(db, "DOUBLE", select((bindparam("n", type_=Integer) * 2).label("v"), func.pg_backend_pid()))
        most = 0

        async def one(n: int):
            nonlocal most
            row = await db.fetch_one(q, {"n": n})
            most = max(most, db.pool().open_connections)
            return row[0], row[1]

        results = await asyncio.gather(*(one(n) for n in range(40)))
        await db.stop()
        return results, most

    results, most = asyncio.run(main())
    assert [v for v, _ in results] == [2 * n for n in range(40)]
    assert most <= 3 and len({pid for _, pid in results}) <= 3


def test_waiters_are_served_in_order_when_every_connection_is_busy():
    async def main():
        holder = await asyncpg.connect(DSN)
        await holder.execute("SELECT pg_advisory_lock(824301)")
        db = _db(1)
        await db.start()
        wait_for_lock = _q(db, "LOCK", select(func.pg_advisory_lock(824301), func.pg_advisory_unlock(824301)))
        echo = _q(db, "ECHO", select(bindparam("n", type_=Integer)))
        order: list[int] = []

        async def blocked():  # takes the only connection until `holder` lets go of the lock
            await db.fetch_one(wait_for_lock)
            order.append(0)

        async def after(n: int):
            await db.fetch_one(echo, {"n": n})
            order.append(n)

        first = asyncio.ensure_future(blocked())
        await asyncio.sleep(0)  # `blocked` starts and takes the idle connection
        assert db.pool().idle_connections == 0
        rest = [asyncio.ensure_future(after(n)) for n in range(1, 5)]
        for _ in range(3):
            await asyncio.sleep(0)
        assert db.pool().waiting == 4 and not order  # all queued behind the lock
        await holder.execute("SELECT pg_advisory_unlock(824301)")
        await asyncio.wait_for(asyncio.gather(first, *rest), 30)  # a guard: a lost waiter fails, not hangs
        await holder.close()
        await db.stop()
        return order

    assert asyncio.run(main()) == [0, 1, 2, 3, 4]


def test_a_refused_statement_keeps_its_connection():
    async def main():
        db = _db(1)
        await db.start()
        pid = _q(db, "PID", select(func.pg_backend_pid()))
        divide = _q(db, "DIVIDE", select(1 / bindparam("d", type_=Integer)))
        before = (await db.fetch_one(pid))[0]
        with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
            await db.fetch_one(divide, {"d": 0})
        after = (await db.fetch_one(pid))[0]
        await db.stop()
        return before, after

    before, after = asyncio.run(main())
    assert before == after


def test_an_interrupted_statement_closes_its_connection_and_the_next_gets_a_new_one():
    async def main():
        holder = await asyncpg.connect(DSN)
        await holder.execute("SELECT pg_advisory_lock(824302)")
        db = _db(1)
        await db.start()
        pid = _q(db, "PID", select(func.pg_backend_pid()))
        first = (await db.fetch_one(pid))[0]
        stuck = asyncio.ensure_future(db.fetch_one(_q(db, "LOCK", select(func.pg_advisory_lock(824302)))))
        waiting = asyncio.ensure_future(db.fetch_one(pid))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not stuck.done() and db.pool().waiting == 1
        stuck.cancel()  # e.g. the request's task was cancelled mid-statement
        with pytest.raises(asyncio.CancelledError):
            await stuck
        new = (await asyncio.wait_for(waiting, 30))[0]  # not stranded: a replacement connection serves it
        await holder.close()
        await db.stop()
        return first, new, db

    first, new, db = asyncio.run(main())
    assert new != first


def test_when_no_replacement_can_be_opened_every_waiter_hears_why():
    async def main():
        holder = await asyncpg.connect(DSN)
        await holder.execute("SELECT pg_advisory_lock(824303)")
        db = _db(1)
        await db.start()
        stuck = asyncio.ensure_future(db.fetch_one(_q(db, "LOCK", select(func.pg_advisory_lock(824303)))))
        one = _q(db, "ONE", select(bindparam("n", type_=Integer)))
        waiters = [asyncio.ensure_future(db.fetch_one(one, {"n": 1})) for _ in range(3)]
        for _ in range(3):
            await asyncio.sleep(0)
        assert db.pool().waiting == 3
        db.pool().dsn = "postgresql://postgres@127.0.0.1:1/postgres"  # the database is now unreachable
        stuck.cancel()
        results = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 30)
        await holder.close()
        await db.stop()
        return results

    results = asyncio.run(main())
    assert len(results) == 3 and all(isinstance(r, StoreUnavailable) for r in results), results


def test_after_stop_nothing_is_lent_from_the_closed_pool():
    async def main():
        db = _db(2)
        await db.start()
        pool = db.pool()
        await db.stop()
        with pytest.raises(StoreUnavailable, match="closed"):
            await pool.acquire()
        return pool.open_connections

    assert asyncio.run(main()) == 0


def test_an_unreachable_server_is_store_unavailable_for_reads_and_writes():
    async def main():
        db = PostgresDatabase("postgresql://postgres@127.0.0.1:1/postgres")
        read = _q(db, "ONE", select(bindparam("n", type_=Integer)))
        write = _q(db, "ONE_AS_WRITE", select(bindparam("n", type_=Integer)), write=True)
        for q in (read, write):
            with pytest.raises(StoreUnavailable, match="cannot connect"):
                await db.fetch_one(q, {"n": 1})
        with pytest.raises(StoreUnavailable):
            await db.start()

    asyncio.run(main())


def test_a_connection_the_server_terminated_is_never_lent_again_and_a_read_on_it_is_answered():
    """AdminShutdownError is a PostgresError, yet the connection is gone: it must not go back to
    the pool. The read that met it is retried once, on a fresh connection."""

    async def main():
        db = _db(4)
        await db.start()
        pid = _q(db, "PID", select(func.pg_backend_pid()))
        pids = {(await db.fetch_one(pid))[0]}
        _kill_before_the_loop_notices(DSN, pids)  # the only idle connection dies
        new = (await db.fetch_one(pid))[0]  # sent on the dead connection, then retried on a fresh one
        again = (await db.fetch_one(pid))[0]
        await db.stop()
        return pids, new, again

    pids, new, again = asyncio.run(main())
    assert new not in pids and again == new


def test_after_every_connection_was_terminated_the_next_statements_succeed(pg_database):
    """A restart ends every connection of the pool: the first read and the first write after it
    are answered, on new connections."""

    async def main():
        store = open_store(pg_database, None, migrate=False)
        store.db._pool_min = 4
        await store.start()
        pool = store.db.pool()
        pid = _q(store.db, "PID", select(func.pg_backend_pid()))
        busy = await asyncio.gather(*(store.db.fetch_one(pid) for _ in range(8)))
        old = {row[0] for row in busy}
        assert pool.open_connections >= 2
        _kill_before_the_loop_notices(pg_database, old)
        assert await store.users.list() == []  # a read
        await store.users.set_role("nobody", "admin")  # a write (matches no row, but runs)
        now = {(await store.db.fetch_one(pid))[0]}
        await store.stop()
        return old, now

    old, now = asyncio.run(main())
    assert not old & now


def test_a_write_whose_connection_dies_mid_statement_is_not_retried(pg_database):
    """The write may have committed before its connection died, so it is never run again: the
    caller hears StoreUnavailable (503), and the statement ran once (here: not at all, since the
    server rolled it back)."""

    async def main():
        store = open_store(pg_database, None, migrate=False)
        await store.start()
        from campusid.idp.store.rows import User

        await store.users.add(User("u1", "carol", "Carol", None, None, None, None, "student", "x", 0))
        holder = await asyncpg.connect(pg_database)
        tx = holder.transaction()
        await tx.start()
        await holder.execute("SELECT 1 FROM users WHERE id = 'u1' FOR UPDATE")  # the write will wait for this
        write = asyncio.ensure_future(store.users.set_role("u1", "admin"))
        waiting = []
        while not waiting:  # the write is on the server, blocked by the row lock
            waiting = await holder.fetch(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
            await asyncio.sleep(0.01)
        await _kill(pg_database, [r["pid"] for r in waiting])
        with pytest.raises(StoreUnavailable, match="may not have been applied"):
            await asyncio.wait_for(write, 30)
        await tx.commit()  # the lock is released: a retried write would now apply
        role = (await store.users.get("u1")).role
        await holder.close()
        await store.stop()
        return role

    assert asyncio.run(main()) == "student"


def test_a_replacement_under_way_when_the_pool_closes_is_cancelled_and_awaited():
    """A dropped connection with callers waiting starts a replacement in the background; the pool
    keeps that task (the loop holds only a weak reference to it) and ends it on close: nothing of
    the pool runs on after stop(). The replacement here connects to a server that never answers,
    so it is still under way when the pool closes."""

    async def main():
        accepted = []
        silent = await asyncio.start_server(lambda _reader, writer: accepted.append(writer), "127.0.0.1", 0)
        port = silent.sockets[0].getsockname()[1]
        holder = await asyncpg.connect(DSN)
        await holder.execute("SELECT pg_advisory_lock(824304)")
        db = _db(1)
        await db.start()
        pool = db.pool()
        stuck = asyncio.ensure_future(db.fetch_one(_q(db, "LOCK", select(func.pg_advisory_lock(824304)))))
        waiting = asyncio.ensure_future(db.fetch_one(_q(db, "ONE", select(bindparam("n", type_=Integer))), {"n": 1}))
        for _ in range(3):
            await asyncio.sleep(0)
        assert pool.waiting == 1
        pool.dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        stuck.cancel()  # its connection is dropped: a replacement starts for the waiter
        with pytest.raises(asyncio.CancelledError):
            await stuck
        while not accepted:  # the replacement is connecting, and will hear nothing back
            await asyncio.sleep(0.01)
        await db.stop()
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and t is not waiting]
        outcome = await asyncio.gather(waiting, return_exceptions=True)
        await holder.close()
        for writer in accepted:
            writer.close()
        silent.close()
        await silent.wait_closed()
        return left, outcome, pool.open_connections

    left, (outcome,), still_open = asyncio.run(main())
    assert left == []  # the replacement did not outlive the pool
    assert isinstance(outcome, StoreUnavailable) and "closed" in str(outcome)
    assert still_open == 0


async def _pid(pool: ConnectionPool) -> int:
    conn = await pool.acquire()
    try:
        return await conn.fetchval("SELECT pg_backend_pid()")
    finally:
        pool.release(conn)


async def _gone(pids, timeout: float = 10.0) -> bool:
    """Whether every backend in `pids` has ended (a connection closed by the pool, not leaked)."""
    conn = await asyncpg.connect(DSN)
    try:
        for _ in range(int(timeout / 0.05)):
            alive = await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])", list(pids))
            if alive == 0:
                return True
            await asyncio.sleep(0.05)
        return False
    finally:
        await conn.close()


def test_a_connection_idle_longer_than_the_bound_is_closed_instead_of_lent():
    """Idle up to max_idle, a connection is lent again; idle longer (a firewall may have cut it
    unseen), it is closed and the caller gets a fresh one. The clock is the test's, so the
    pool's own recycling (every max_idle / 4 of real time) never runs here."""

    async def main():
        now = [1000.0]
        pool = ConnectionPool(DSN, 4, minimum=1, max_idle=300, clock=lambda: now[0])
        await pool.open()
        first = await _pid(pool)
        now[0] += 300
        again = await _pid(pool)  # idle exactly the bound: still lent
        now[0] += 301
        fresh = await _pid(pool)
        closed = await _gone([first])
        counts = (pool.open_connections, pool.idle_connections)
        await pool.close()
        return first, again, fresh, closed, counts

    first, again, fresh, closed, counts = asyncio.run(main())
    assert again == first
    assert fresh != first and closed  # the stale one was closed, not just forgotten
    assert counts == (1, 1)


def test_after_a_burst_the_idle_pool_shrinks_back_to_its_minimum_with_fresh_connections():
    """Six callers at once open six connections; left idle past max_idle (no statement comes), the
    pool closes them all on its own and opens its minimum afresh, so none of the six is kept."""

    async def main():
        pool = ConnectionPool(DSN, 8, minimum=2, max_idle=0.5)
        await pool.open()
        burst = [await pool.acquire() for _ in range(6)]
        pids = {await conn.fetchval("SELECT pg_backend_pid()") for conn in burst}
        for conn in burst:
            pool.release(conn)
        assert (pool.open_connections, pool.idle_connections) == (6, 6)
        for _ in range(200):  # a guard of 10 s: the recycling runs every 0.125 s
            if pool.open_connections == 2 and pool.idle_connections == 2:
                break
            await asyncio.sleep(0.05)
        counts = (pool.open_connections, pool.idle_connections)
        closed = await _gone(pids)
        kept = {await _pid(pool), await _pid(pool)}
        await pool.close()
        return counts, closed, kept & pids

    counts, closed, reused = asyncio.run(main())
    assert counts == (2, 2)
    assert closed and reused == set()
