"""A small pool of asyncpg connections for one event loop, on asyncpg's public API only.

Why not asyncpg's own Pool, decided by measurement (bench/pg_pool.py: a one-row prepared SELECT,
16 at a time, five alternating runs on this 2-core VM): 73-89 µs of client CPU per statement
through `Pool.fetchrow`, 24 µs through this pool, i.e. ~50 µs more per statement for its acquire
context, shielded release task and per-use reset. Our statements need none of what that buys:
each runs alone in autocommit, or in one transaction that ends before the connection is given
back, so no session state (SET, LISTEN, cursors, advisory locks, open transactions) outlives a
loan.

What the pool guarantees:
- A connection that may be broken is never lent again: after a connection-level failure (see
  `connection_lost`) or an interrupted statement it is terminated and dropped, and so is every
  idle connection (a restart of the server ends them all; SQLAlchemy's pool does the same).
- Before a connection is lent, one the server has closed meanwhile is skipped.
- At most `size` connections; when all are lent, callers wait in order.
- No connection can be opened: StoreUnavailable, for the caller and for everyone waiting.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any

import asyncpg

from campusid.idp.store.errors import StoreUnavailable

CONNECT_TIMEOUT = 5.0

# Failures that say the connection (not the statement) is gone or cannot be trusted: the client
# side of the connection failed, the server is shutting down or restarting (class 57P, which
# asyncpg files under PostgresError beside ordinary refusals), or the socket failed.
_CONNECTION_ERRORS = (
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.InterfaceError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
    # The connection is still mid-way through another exchange: an idle connection that received
    # the server's shutdown notice (57P01) before its socket closed refuses the next statement
    # with "cannot switch to state ..."; the statement was not sent.
    asyncpg.exceptions.InternalClientError,
    OSError,
    asyncio.CancelledError,  # interrupted mid-statement: the protocol state is unknown
    asyncio.TimeoutError,
)


def connection_lost(exc: BaseException, conn: Any) -> bool:
    """True when `conn` must not be used again after `exc`."""
    return isinstance(exc, _CONNECTION_ERRORS) or conn.is_closed()


async def connect(dsn: str) -> Any:
    """A new connection, or StoreUnavailable when the server cannot be reached."""
    try:
        return await asyncpg.connect(dsn, timeout=CONNECT_TIMEOUT)
    except (TimeoutError, OSError, asyncpg.exceptions.PostgresConnectionError) as exc:
        raise StoreUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
    except (asyncpg.exceptions.CannotConnectNowError, asyncpg.exceptions.TooManyConnectionsError) as exc:
        raise StoreUnavailable(f"PostgreSQL refuses connections right now: {exc}") from exc


class ConnectionPool:
    def __init__(self, dsn: str, size: int) -> None:
        self.dsn = dsn
        self._size = size
        self._idle: list[Any] = []
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._open = 0  # connections lent out or idle, plus those being opened
        self._closed = False

    @property
    def open_connections(self) -> int:
        return self._open

    @property
    def idle_connections(self) -> int:
        return len(self._idle)

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def open(self, count: int) -> None:
        for _ in range(count):
            self._idle.append(await self._connect())

    async def _connect(self) -> Any:
        self._open += 1
        try:
            return await connect(self.dsn)
        except BaseException:
            self._open -= 1
            raise

    async def acquire(self) -> Any:
        if self._closed:
            raise StoreUnavailable("the database connections are closed")
        while self._idle:
            conn = self._idle.pop()
            if not conn.is_closed():
                return conn
            self._open -= 1  # the server closed it while it was idle
        if self._open < self._size:
            return await self._connect()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(waiter.result())  # handed over just as the caller gave up
            raise

    def release(self, conn: Any) -> None:
        """Give back a connection whose statement completed (or was refused by the server)."""
        if self._closed or conn.is_closed():
            self._drop(conn)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def discard(self, conn: Any) -> None:
        """Drop a connection that failed at connection level, and every idle one with it."""
        idle, self._idle = self._idle, []
        for other in idle:
            self._drop(other)
        self._drop(conn)

    def _drop(self, conn: Any) -> None:
        conn.terminate()
        self._open -= 1
        if self._waiters and not self._closed:  # a waiter would otherwise wait for a connection that is gone
            asyncio.ensure_future(self._replace())

    async def _replace(self) -> None:
        try:
            conn = await self._connect()
        except Exception as exc:  # noqa: BLE001 - the database cannot be reached: every waiter is told
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        self.release(conn)

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            self._open -= 1
            await conn.close()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(StoreUnavailable("the database connections are closed"))
