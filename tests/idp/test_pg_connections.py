"""The PostgreSQL hot path's connections (store/hot.py LoopConnections), against the real server:
one statement per loan, bounded, waiters served in order, broken or interrupted connections never
lent again, refused statements keep theirs."""

from __future__ import annotations

import asyncio
import os

import pytest

from campusid.idp.store.hot import LoopConnections

asyncpg = pytest.importorskip("asyncpg")


def _dsn() -> str:
    url = os.environ.get("CAMPUSID_DATABASE_URL", "")
    if url.startswith(("postgresql", "postgres")):
        url = url.replace("postgresql+psycopg://", "postgresql://")
        return url.rsplit("/", 1)[0] + "/postgres"
    return "postgresql://postgres@127.0.0.1:5432/postgres"


DSN = _dsn()


@pytest.fixture(scope="module", autouse=True)
def _postgres_up():
    async def probe():
        conn = await asyncpg.connect(DSN, timeout=5)
        await conn.close()

    try:
        asyncio.run(probe())
    except (OSError, asyncpg.PostgresError) as exc:
        pytest.skip(f"PostgreSQL not reachable at {DSN}: {exc}")


async def _one_connection_behind_lock(key: int):
    """A pool of one connection, and another connection holding advisory lock `key`: a statement
    that takes the lock keeps the pool's only connection busy until the holder lets go."""
    holder = await asyncpg.connect(DSN)
    await holder.execute(f"SELECT pg_advisory_lock({key})")
    pool = LoopConnections(DSN, 1)
    await pool.open(1)
    return holder, pool


def test_many_statements_share_a_bounded_set_of_connections():
    async def main():
        pool = LoopConnections(DSN, 3)
        await pool.open(1)
        most = 0

        async def one(n: int) -> int:
            nonlocal most
            row = await pool.call("fetchrow", "SELECT $1::int * 2 AS v, pg_backend_pid() AS pid", [n])
            most = max(most, pool._open)
            return row["v"], row["pid"]

        results = await asyncio.gather(*(one(n) for n in range(40)))
        await pool.close()
        return results, most

    results, most = asyncio.run(main())
    assert [v for v, _ in results] == [2 * n for n in range(40)]
    assert most <= 3 and len({pid for _, pid in results}) <= 3


def test_waiters_are_served_in_order_when_every_connection_is_busy():
    async def main():
        holder, pool = await _one_connection_behind_lock(824301)
        order: list[int] = []

        async def blocked():  # takes the only connection until `holder` lets go of the lock
            await pool.call("execute", "SELECT pg_advisory_lock(824301); SELECT pg_advisory_unlock(824301)", [])
            order.append(0)

        async def after(n: int):
            await pool.call("fetchval", "SELECT $1::int", [n])
            order.append(n)

        first = asyncio.ensure_future(blocked())
        await asyncio.sleep(0)  # `blocked` starts and takes the idle connection
        assert not pool._idle
        rest = [asyncio.ensure_future(after(n)) for n in range(1, 5)]
        for _ in range(3):
            await asyncio.sleep(0)
        assert len(pool._waiters) == 4 and not order  # all queued behind the lock
        await holder.execute("SELECT pg_advisory_unlock(824301)")
        await asyncio.wait_for(asyncio.gather(first, *rest), 30)  # a guard: a lost waiter fails, not hangs
        await holder.close()
        await pool.close()
        return order

    assert asyncio.run(main()) == [0, 1, 2, 3, 4]


def test_a_refused_statement_keeps_its_connection():
    async def main():
        pool = LoopConnections(DSN, 1)
        await pool.open(1)
        pid = await pool.call("fetchval", "SELECT pg_backend_pid()", [])
        with pytest.raises(asyncpg.exceptions.DivisionByZeroError):
            await pool.call("fetchval", "SELECT 1 / $1::int", [0])
        again = await pool.call("fetchval", "SELECT pg_backend_pid()", [])
        await pool.close()
        return pid, again

    pid, again = asyncio.run(main())
    assert pid == again


def test_an_interrupted_statement_closes_its_connection_and_the_next_gets_a_new_one():
    async def main():
        holder, pool = await _one_connection_behind_lock(824302)
        pid = await pool.call("fetchval", "SELECT pg_backend_pid()", [])
        stuck = asyncio.ensure_future(pool.call("execute", "SELECT pg_advisory_lock(824302)", []))
        waiting = asyncio.ensure_future(pool.call("fetchval", "SELECT pg_backend_pid()", []))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not stuck.done() and len(pool._waiters) == 1
        stuck.cancel()  # e.g. the request's task was cancelled mid-statement
        with pytest.raises(asyncio.CancelledError):
            await stuck
        new_pid = await asyncio.wait_for(waiting, 30)  # not stranded: a replacement connection serves it
        await holder.close()
        await pool.close()
        return pid, new_pid, pool._open

    pid, new_pid, still_open = asyncio.run(main())
    assert new_pid != pid and still_open == 0


def test_when_no_replacement_can_be_opened_every_waiter_hears_why():
    async def main():
        holder, pool = await _one_connection_behind_lock(824303)
        stuck = asyncio.ensure_future(pool.call("execute", "SELECT pg_advisory_lock(824303)", []))
        waiters = [asyncio.ensure_future(pool.call("fetchval", "SELECT 1", [])) for _ in range(3)]
        for _ in range(3):
            await asyncio.sleep(0)
        assert len(pool._waiters) == 3
        pool._dsn = "postgresql://postgres@127.0.0.1:1/postgres"  # the database is now unreachable
        stuck.cancel()
        results = await asyncio.wait_for(asyncio.gather(*waiters, return_exceptions=True), 30)
        await holder.close()
        await pool.close()
        return results

    results = asyncio.run(main())
    assert len(results) == 3 and all(isinstance(r, OSError) for r in results), results


def test_after_close_nothing_is_lent():
    async def main():
        pool = LoopConnections(DSN, 2)
        await pool.open(2)
        await pool.close()
        with pytest.raises(RuntimeError, match="closed"):
            await pool.call("fetchval", "SELECT 1", [])
        return pool._open

    assert asyncio.run(main()) == 0
