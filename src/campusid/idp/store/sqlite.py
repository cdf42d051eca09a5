"""The embedded default: SQLite through the standard library's sqlite3, statements run inline.

Decision: statements run on the event loop's own thread, not on a worker thread. SQLite is a
library inside this process, not a server: a statement is a few microseconds of CPU against pages
the OS has cached (WAL mode, synchronous=NORMAL), with no network and no other process to wait
for, so handing it to a thread would cost more than it saves. The one wait possible is another
writer's lock (a second process on the same file, such as the CLI), bounded by busy_timeout;
`campusid serve` with SQLite is one process, and several workers are told to use PostgreSQL.

Each thread has its own connection (an event loop runs on one thread; tests and the CLI on
others), in autocommit mode: a lone statement commits itself, `transaction()` groups several.

Decision: each connection memory-maps the database (`MMAP_SIZE`), and keeps SQLite's default page
cache. Every secret is looked up by its hash, so on a grown database each lookup and insert lands on
a random leaf; without the map, each page outside the 2 MB cache is a read() through the kernel.
Measured with `bench/sqlite_pages.py` on a database of 100,000 users and 700,000 sessions, grants
and refresh tokens (bench/README.md, "Growth"): per authorization + grant + redemption, 13.7 read
calls and 56 KB read with the defaults, 5.4 and 22 KB mapped (the rest are WAL frames, which are
always read), 7.0 and 29 KB with a 64 MB cache instead, and nothing more with both. The map is
the OS's page cache itself: it adds no copy of the pages to the process.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from sqlalchemy.dialects import sqlite as sqlite_dialect

from campusid.idp.store.database import Database, Prepared, Queries
from campusid.idp.store.errors import Conflict, StoreUnavailable
from campusid.idp.store.janitor import Janitor
from campusid.idp.store.rows import Grant, Interaction, Session
from campusid.idp.store.sessions import Sessions
from campusid.idp.store.store import Store

# Bytes of the database file each connection maps (SQLite caps it at its build's maximum, 2 GB by
# default); the rest of a larger file is read as before.
MMAP_SIZE = 1 << 31

# Primary result codes that mean "the database cannot be used right now", not "this statement is
# wrong": busy or locked past busy_timeout, I/O error, disk full, cannot open the file.
_UNAVAILABLE = {5, 6, 10, 13, 14}


def _translate(exc: sqlite3.Error) -> Exception:
    if isinstance(exc, sqlite3.IntegrityError):
        return Conflict(str(exc))
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF in _UNAVAILABLE:
        return StoreUnavailable(f"the database cannot be used right now: {exc}")
    return exc


class _Connection(Queries):
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.raw = conn

    async def fetch_one(self, q: Prepared, values: Mapping[str, Any] = {}) -> tuple | None:  # noqa: B006
        try:
            cur = self.raw.execute(q.sql, q.args(values))
            rows = cur.fetchall()  # every row: a RETURNING statement completes only when drained
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        cur.close()
        return rows[0] if rows else None

    async def fetch_all(self, q: Prepared, values: Mapping[str, Any] = {}) -> list[tuple]:  # noqa: B006
        try:
            cur = self.raw.execute(q.sql, q.args(values))
            rows = cur.fetchall()
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        cur.close()
        return rows

    async def execute(self, q: Prepared, values: Mapping[str, Any] = {}) -> int:  # noqa: B006
        try:
            cur = self.raw.execute(q.sql, q.args(values))
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        count = cur.rowcount
        cur.close()
        return count

    async def execute_many(self, q: Prepared, rows: Sequence[Mapping[str, Any]]) -> None:
        try:
            self.raw.executemany(q.sql, [q.args(values) for values in rows]).close()
        except sqlite3.Error as exc:
            raise _translate(exc) from exc


class SQLiteDatabase(Database):
    dialect = sqlite_dialect.dialect()

    def __init__(self, path: str) -> None:
        self._path = self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _conn(self) -> _Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                raw = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, cached_statements=128)
                raw.execute("PRAGMA busy_timeout=10000")
                raw.execute("PRAGMA synchronous=NORMAL")
                raw.execute("PRAGMA foreign_keys=ON")
                raw.execute(f"PRAGMA mmap_size={MMAP_SIZE}")
            except sqlite3.Error as exc:
                raise _translate(exc) from exc
            conn = self._local.conn = _Connection(raw)
            with self._lock:
                self._all.append(raw)
        return conn

    async def fetch_one(self, q: Prepared, values: Mapping[str, Any] = {}) -> tuple | None:  # noqa: B006
        return await self._conn().fetch_one(q, values)

    async def fetch_all(self, q: Prepared, values: Mapping[str, Any] = {}) -> list[tuple]:  # noqa: B006
        return await self._conn().fetch_all(q, values)

    async def execute(self, q: Prepared, values: Mapping[str, Any] = {}) -> int:  # noqa: B006
        return await self._conn().execute(q, values)

    async def checkpoint(self) -> None:
        """Copy the WAL's committed pages into the database file now, on this connection, without
        waiting for anyone (PASSIVE: what readers still use stays for a later one). Otherwise the
        copy falls to the commit that finds the WAL past `wal_autocheckpoint` (1000 pages), which
        after a housekeeping batch would be a request's (see store/janitor.py)."""
        try:
            self._conn().raw.execute("PRAGMA wal_checkpoint(PASSIVE)").close()
        except sqlite3.Error as exc:
            raise _translate(exc) from exc

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Queries]:
        conn = self._conn()
        raw = conn.raw
        try:
            raw.execute("BEGIN IMMEDIATE")  # the write lock now: no upgrade deadlock later
        except sqlite3.Error as exc:
            raise _translate(exc) from exc
        try:
            yield conn
        except BaseException:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise
        try:
            raw.execute("COMMIT")
        except sqlite3.Error as exc:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise _translate(exc) from exc

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


class SQLiteSessions(Sessions):
    """A successful login's writes as one transaction (SQLite has no INSERT or DELETE inside a
    common table expression)."""

    async def complete_login(
        self,
        interaction_hash: str,
        session: Session,
        replaces: str | None = None,
        *,
        grant: Grant | None = None,
        next_interaction: Interaction | None = None,
    ) -> bool:
        async with self.db.transaction() as tx:
            if await tx.fetch_one(self._finish_interaction, {"h": interaction_hash}) is None:
                return False  # another request finished it: write nothing
            if replaces is not None:
                await tx.execute(self._delete, {"h": replaces})
            await tx.execute(self._insert, vars(session))
            if grant is not None:
                await self._grants.insert(tx, grant)
            if next_interaction is not None:
                await tx.execute(self._insert_interaction, vars(next_interaction))
        return True


class SQLiteJanitor(Janitor):
    @contextlib.asynccontextmanager
    async def lock(self) -> AsyncIterator[bool]:
        """A non-blocking exclusive flock(2) on a file beside the database. A SQLite database is
        used by the processes of one host (its locking needs a local file system), so this holds
        across every process that can open it; the kernel drops it with a process that dies."""
        fd = os.open(self.db.path + ".housekeeping-lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


class SQLiteStore(Store):
    sessions_class = SQLiteSessions
    janitor_class = SQLiteJanitor
