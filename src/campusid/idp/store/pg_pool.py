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
- A connection idle for longer than `max_idle` is closed instead of lent: a firewall or NAT may
  have dropped it without either end noticing, and the server keeps a process for each one. Every
  quarter of `max_idle` the pool closes those and opens fresh ones back up to its minimum, so after
  a burst it shrinks back to `minimum`, and a quiet worker's next request finds one ready.
- Every task the pool starts (a replacement for a dropped connection, a close) is kept until it
  ends, so none is garbage-collected mid-flight (the event loop holds only a weak reference to a
  task), and `close()` cancels and awaits them: nothing of the pool outlives it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any

import asyncpg

from campusid.idp.store.errors import StoreUnavailable

CONNECT_TIMEOUT = 5.0
CLOSE_TIMEOUT = 1.0
# Seconds a connection may sit idle and still be lent: below the idle timeouts of the firewalls and
# NAT tables a database server is commonly behind (often 15 minutes to an hour). A quiet worker
# pays for it with a reconnection of its minimum every five minutes.
MAX_IDLE = 300.0

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
    def __init__(
        self,
        dsn: str,
        size: int,
        *,
        minimum: int = 0,
        max_idle: float = MAX_IDLE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_idle <= 0:
            raise ValueError("max_idle must be positive")
        self.dsn = dsn
        self._size = size
        self._minimum = min(minimum, size)
        self._max_idle = max_idle
        self._clock = clock
        # (connection, when it was given back): the most recently used last, and lent first
        self._idle: list[tuple[Any, float]] = []
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._open = 0  # connections lent out or idle, plus those being opened
        self._closed = False
        self._tasks: set[asyncio.Future] = set()
        self._recycler: asyncio.Future | None = None

    @property
    def open_connections(self) -> int:
        return self._open

    @property
    def idle_connections(self) -> int:
        return len(self._idle)

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    async def open(self) -> None:
        """Open the minimum now, and start recycling idle connections."""
        for _ in range(self._minimum - self._open):
            self._idle.append((await self._connect(), self._clock()))
        if self._recycler is None and not self._closed:
            self._recycler = asyncio.ensure_future(self._recycle_forever())

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
        now = self._clock()
        while self._idle:
            conn, since = self._idle.pop()
            if conn.is_closed():
                self._open -= 1  # the server closed it while it was idle
            elif now - since > self._max_idle:
                self._retire(conn)  # too long idle to trust (and those below it were given back earlier)
            else:
                return conn
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
        self._idle.append((conn, self._clock()))

    def discard(self, conn: Any) -> None:
        """Drop a connection that failed at connection level, and every idle one with it."""
        idle, self._idle = self._idle, []
        for other, _ in idle:
            self._drop(other)
        self._drop(conn)

    def _drop(self, conn: Any) -> None:
        conn.terminate()
        self._open -= 1
        if self._waiters and not self._closed:  # a waiter would otherwise wait for a connection that is gone
            self._spawn(self._replace())

    def _spawn(self, work: Coroutine) -> None:
        """Run `work` in the background, referenced until it ends."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _retire(self, conn: Any) -> None:
        """Let go of a sound connection the pool no longer wants: closed politely, in the background."""
        self._open -= 1
        self._spawn(_close(conn))

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

    async def recycle(self) -> None:
        """Close every connection idle for longer than `max_idle`, then open fresh ones back up to
        the minimum (each handed to a waiter, or left idle)."""
        now = self._clock()
        stale = [conn for conn, since in self._idle if now - since > self._max_idle]
        self._idle = [(conn, since) for conn, since in self._idle if now - since <= self._max_idle]
        self._open -= len(stale)
        await asyncio.gather(*(_close(conn) for conn in stale))
        while not self._closed and self._open < self._minimum:
            try:
                conn = await self._connect()
            except StoreUnavailable:
                return  # the server is away: the next round, or the next request, tries again
            self.release(conn)

    async def _recycle_forever(self) -> None:
        while True:
            await asyncio.sleep(self._max_idle / 4)
            # A round that fails (the database dropped, say) is tried again at the next; acquire()
            # keeps the bound meanwhile.
            with contextlib.suppress(Exception):
                await self.recycle()

    async def close(self) -> None:
        self._closed = True
        background = [*self._tasks, *([self._recycler] if self._recycler is not None else [])]
        for task in background:
            task.cancel()  # a replacement no one will use (the waiters are told below), a close cut short
        await asyncio.gather(*background, return_exceptions=True)
        idle, self._idle = self._idle, []
        for conn, _ in idle:
            self._open -= 1
            await conn.close()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(StoreUnavailable("the database connections are closed"))


async def _close(conn: Any) -> None:
    """Close `conn` with the protocol's goodbye; a server that does not answer, or a close cut
    short, just loses the socket."""
    try:
        await conn.close(timeout=CLOSE_TIMEOUT)
    except asyncio.CancelledError:
        conn.terminate()
        raise
    except Exception:  # noqa: BLE001 - the connection is being let go either way
        conn.terminate()
