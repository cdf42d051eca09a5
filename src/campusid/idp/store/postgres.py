"""PostgreSQL through asyncpg, on the event loop: no thread ever waits for the database.

Each statement is prepared once per connection by asyncpg's statement cache and costs one round
trip; a lone statement is its own transaction (an UPDATE … RETURNING is atomic on its own, so of
any number of concurrent redemptions exactly one wins, on any number of workers).

Connections belong to the event loop that opened them (`start()`, from the app's lifespan or the
CLI's `async with store`); on a loop without them (a test client without lifespan) a statement
opens a connection of its own. When a connection fails at connection level:
- a read is retried once, on a fresh connection (the pool has dropped every idle one), so the
  first request after a server restart is answered;
- a write is never retried, since it may have committed before the connection died: the caller
  gets StoreUnavailable (503), as when the server cannot be reached at all; except when the
  connection refused to send it (asyncpg's InternalClientError: the connection was still busy with
  the server's shutdown notice), which is retried like a read, and so is a transaction's BEGIN.
A statement the server refuses (a constraint, a syntax error) leaves its connection in the pool.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import asyncpg
from sqlalchemy import BigInteger, bindparam, delete, func, insert, select
from sqlalchemy.dialects.postgresql import asyncpg as asyncpg_dialect

from campusid.idp.store.cas import PostgresCas
from campusid.idp.store.database import Database, Prepared, Queries
from campusid.idp.store.errors import Conflict, StoreUnavailable
from campusid.idp.store.grants import Grants
from campusid.idp.store.janitor import Janitor
from campusid.idp.store.notices import Notices
from campusid.idp.store.pg_pool import MAX_IDLE, ConnectionPool, connect, connection_lost
from campusid.idp.store.rows import Grant, Interaction, Session
from campusid.idp.store.schema import grants, interactions, sessions
from campusid.idp.store.sessions import Sessions
from campusid.idp.store.store import Store

# Connections per worker process. Each holds a statement for one round trip, so a few serve many
# concurrent requests; commits of concurrent writers share WAL flushes.
POOL_MIN, POOL_MAX = 2, 20
# The session-level advisory lock one worker holds while it does the housekeeping.
HOUSEKEEPING_LOCK = 72873102
_KEY = bindparam("key", type_=BigInteger())


def _translate(exc: asyncpg.PostgresError) -> Exception:
    if isinstance(exc, asyncpg.exceptions.UniqueViolationError):
        return Conflict(exc.message)
    return exc


class _Connection(Queries):
    """Statements on one connection (inside a transaction): any failure propagates."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def fetch_one(self, q: Prepared, values: Mapping[str, Any] = {}) -> Any:  # noqa: B006
        return await self.conn.fetchrow(q.sql, *q.args(values))

    async def fetch_all(self, q: Prepared, values: Mapping[str, Any] = {}) -> list:  # noqa: B006
        return await self.conn.fetch(q.sql, *q.args(values))

    async def execute(self, q: Prepared, values: Mapping[str, Any] = {}) -> int:  # noqa: B006
        status = await self.conn.execute(q.sql, *q.args(values))
        return _rowcount(status)

    async def execute_many(self, q: Prepared, rows) -> None:
        await self.conn.executemany(q.sql, [q.args(values) for values in rows])


def _rowcount(status: str) -> int:
    """The row count of a command tag such as 'UPDATE 1' or 'INSERT 0 1'."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


class PostgresDatabase(Database):
    dialect = asyncpg_dialect.dialect()

    def __init__(
        self, dsn: str, pool_min: int = POOL_MIN, pool_max: int = POOL_MAX, max_idle: float = MAX_IDLE
    ) -> None:
        self._dsn = dsn
        self._pool_min, self._pool_max, self._max_idle = pool_min, pool_max, max_idle
        self._pools: dict[asyncio.AbstractEventLoop, ConnectionPool] = {}

    def pool(self) -> ConnectionPool | None:
        """The running event loop's pool, if `start()` opened one."""
        return self._pools.get(asyncio.get_running_loop())

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if loop not in self._pools:
            pool = ConnectionPool(self._dsn, self._pool_max, minimum=self._pool_min, max_idle=self._max_idle)
            await pool.open()
            self._pools[loop] = pool

    async def stop(self) -> None:
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.close()

    @contextlib.asynccontextmanager
    async def _lend(self) -> AsyncIterator[Any]:
        """A connection for one statement or transaction: the pool's, else one of its own."""
        pool = self.pool()
        if pool is None:
            conn = await connect(self._dsn)
            try:
                yield conn
            finally:
                try:
                    await conn.close(timeout=1)
                except Exception:  # noqa: BLE001 - already broken: just let it go
                    conn.terminate()
            return
        conn = await pool.acquire()
        try:
            yield conn
        except BaseException as exc:
            if connection_lost(exc, conn):
                pool.discard(conn)
            else:
                pool.release(conn)
            raise
        pool.release(conn)

    async def _run(self, method: str, q: Prepared, values: Mapping[str, Any]) -> Any:
        args = q.args(values)
        for attempt in (1, 2):
            try:
                async with self._lend() as conn:
                    return await getattr(conn, method)(q.sql, *args)
            except asyncpg.PostgresError as exc:
                if not isinstance(exc, asyncpg.exceptions.PostgresConnectionError) and not _is_shutdown(exc):
                    raise _translate(exc) from exc
                failure: BaseException = exc
            except (TimeoutError, asyncpg.exceptions.InterfaceError, OSError) as exc:
                failure = exc
            except asyncpg.exceptions.InternalClientError as exc:
                failure = exc  # never sent: safe to send again, even a write
            # The connection died under the statement (asyncio.CancelledError is not caught: the
            # caller gave up, and the connection was dropped on the way out).
            unsent = isinstance(failure, asyncpg.exceptions.InternalClientError)
            if (q.write and not unsent) or attempt == 2:
                verb = "may not have been" if q.write else "was not"
                raise StoreUnavailable(f"the database connection was lost; the statement {verb} applied") from failure
        raise AssertionError("unreachable")  # pragma: no cover

    async def fetch_one(self, q: Prepared, values: Mapping[str, Any] = {}) -> Any:  # noqa: B006
        return await self._run("fetchrow", q, values)

    async def fetch_all(self, q: Prepared, values: Mapping[str, Any] = {}) -> list:  # noqa: B006
        return await self._run("fetch", q, values)

    async def execute(self, q: Prepared, values: Mapping[str, Any] = {}) -> int:  # noqa: B006
        return _rowcount(await self._run("execute", q, values))

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Queries]:
        """One transaction on one connection; never retried once begun (it writes). A BEGIN that a
        dead connection could not send is sent again on a fresh one."""
        try:
            async with self._lend_begun() as conn:
                yield _Connection(conn)
        except asyncpg.PostgresError as exc:
            if isinstance(exc, asyncpg.exceptions.PostgresConnectionError) or _is_shutdown(exc):
                raise StoreUnavailable("the database connection was lost during a transaction") from exc
            raise _translate(exc) from exc
        except (
            TimeoutError,
            asyncpg.exceptions.InterfaceError,
            asyncpg.exceptions.InternalClientError,
            OSError,
        ) as exc:
            raise StoreUnavailable("the database connection was lost during a transaction") from exc

    @contextlib.asynccontextmanager
    async def _lend_begun(self) -> AsyncIterator[Any]:
        """A connection with a transaction begun; committed when the block ends, else rolled back."""
        for attempt in (1, 2):
            begun = False
            try:
                async with self._lend() as conn:
                    tx = conn.transaction()
                    await tx.start()  # a connection that cannot send it is dropped by _lend
                    begun = True
                    try:
                        yield conn
                    except BaseException:
                        if not conn.is_closed():
                            await tx.rollback()
                        raise
                    await tx.commit()
                    return
            except asyncpg.exceptions.InternalClientError:
                if begun or attempt == 2:
                    raise


def _is_shutdown(exc: BaseException) -> bool:
    return isinstance(
        exc,
        (
            asyncpg.exceptions.AdminShutdownError,
            asyncpg.exceptions.CrashShutdownError,
            asyncpg.exceptions.CannotConnectNowError,
        ),
    )


def _insert_from_finished(table, prefix: str, finished):
    """INSERT INTO table SELECT :prefix_col, … FROM finished: the row is written only if the
    interaction was finished by this statement."""
    values = [bindparam(prefix + c.name, type_=c.type) for c in table.c]
    return insert(table).from_select([c.name for c in table.c], select(*values).select_from(finished))


def complete_login_statement(with_grant: bool, with_next: bool):
    """A successful login's writes as one data-modifying CTE: finish the interaction and, only for
    the statement that finished it, end the browser's old session, start the new one and write
    the code's grant or the consent step's interaction."""
    finished = (
        delete(interactions)
        .where(interactions.c.id_hash == bindparam("h"))
        .returning(interactions.c.id_hash)
        .cte("finished")
    )
    steps = [
        delete(sessions)
        .where(sessions.c.id_hash == bindparam("old"), select(finished.c.id_hash).exists())
        .cte("ended"),
        _insert_from_finished(sessions, "s_", finished).cte("started"),
    ]
    if with_grant:
        steps.append(_insert_from_finished(grants, "g_", finished).cte("granted"))
    if with_next:
        steps.append(_insert_from_finished(interactions, "n_", finished).cte("next"))
    return select(finished.c.id_hash).add_cte(*steps)


def _prefixed(prefix: str, row: Any) -> dict:
    return {prefix + k: v for k, v in vars(row).items()}


class PostgresSessions(Sessions):
    """A successful login's writes as one statement (a data-modifying CTE per combination of
    grant and next interaction, each compiled at start)."""

    def __init__(self, db: PostgresDatabase, grants: Grants, notices: Notices) -> None:
        super().__init__(db, grants, notices)
        self._complete_login = {
            (g, n): db.prepare(f"COMPLETE_LOGIN_{int(g)}{int(n)}", complete_login_statement(g, n), write=True)
            for g in (False, True)
            for n in (False, True)
        }

    async def complete_login(
        self,
        interaction_hash: str,
        session: Session,
        replaces: str | None = None,
        *,
        grant: Grant | None = None,
        next_interaction: Interaction | None = None,
    ) -> bool:
        q = self._complete_login[(grant is not None, next_interaction is not None)]
        values = {"h": interaction_hash, "old": replaces, **_prefixed("s_", session)}
        if grant is not None:
            values.update(_prefixed("g_", grant))
        if next_interaction is not None:
            values.update(_prefixed("n_", next_interaction))
        return await self.db.fetch_one(q, values) is not None


class PostgresJanitor(Janitor):
    # A purge batch locks only its own rows: the requests wait for no lock of it, only share the
    # server's time with it (which the pace bounds), so its statements may run longer than
    # SQLite's, and each pays a round trip: 25 ms, where 5 ms made the purge 2-4x longer
    # (bench/README.md, "Housekeeping under load").
    purge_budget = 0.025

    def __init__(self, db: PostgresDatabase) -> None:
        super().__init__(db)
        self._try_lock = db.prepare("TRY_HOUSEKEEPING_LOCK", select(func.pg_try_advisory_lock(_KEY)), write=True)
        self._unlock = db.prepare("HOUSEKEEPING_UNLOCK", select(func.pg_advisory_unlock(_KEY)), write=True)

    @contextlib.asynccontextmanager
    async def lock(self) -> AsyncIterator[bool]:
        """pg_try_advisory_lock on a connection kept for the holder's whole run: one holder across
        every worker and host of the database, never a wait; the server drops it with the
        connection, should the holder die."""
        async with self.db._lend() as raw:
            conn = _Connection(raw)
            held = bool((await conn.fetch_one(self._try_lock, {"key": HOUSEKEEPING_LOCK}))[0])
            try:
                yield held
            finally:
                if held:
                    await conn.fetch_one(self._unlock, {"key": HOUSEKEEPING_LOCK})


class PostgresStore(Store):
    sessions_class = PostgresSessions
    janitor_class = PostgresJanitor
    cas_class = PostgresCas
