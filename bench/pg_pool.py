"""CPU per statement: asyncpg's Pool against the store's own pool (store/pg_pool.py).

    .venv/bin/python bench/pg_pool.py [DSN]

Runs the same prepared one-row SELECT N times through each, 16 at a time, alternating the two
five times, and prints the process CPU time per statement of each run.
"""

from __future__ import annotations

import asyncio
import sys
import time

import asyncpg

from campusid.idp.store.pg_pool import ConnectionPool

DSN = sys.argv[1] if len(sys.argv) > 1 else "postgresql://postgres@127.0.0.1:5432/postgres"
N, CONCURRENCY, SQL = 4000, 16, "SELECT $1::int AS v"


async def through_asyncpg_pool(pool) -> None:
    await pool.fetchrow(SQL, 1)


async def through_own_pool(pool) -> None:
    conn = await pool.acquire()
    try:
        await conn.fetchrow(SQL, 1)
    finally:
        pool.release(conn)


async def measure(call, pool) -> float:
    async def worker() -> None:
        for _ in range(N // CONCURRENCY):
            await call(pool)

    start = time.process_time()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return (time.process_time() - start) / N * 1e6


async def main() -> None:
    theirs = await asyncpg.create_pool(DSN, min_size=8, max_size=8)
    ours = ConnectionPool(DSN, 8, minimum=8)
    await ours.open()
    await measure(through_asyncpg_pool, theirs), await measure(through_own_pool, ours)  # warm up
    for _ in range(5):
        a = await measure(through_asyncpg_pool, theirs)
        b = await measure(through_own_pool, ours)
        print(f"asyncpg Pool {a:6.1f} µs/statement   own pool {b:6.1f} µs/statement   difference {a - b:5.1f}")
    await theirs.close()
    await ours.close()


if __name__ == "__main__":
    asyncio.run(main())
