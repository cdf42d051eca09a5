"""The request hot path's statements, async: the few that run on every authorize, token,
userinfo and records request (DESIGN 6: no avoidable database round trips).

Everything else goes through the SQLAlchemy repositories. These statements are written once
in SQL, with `:name` parameters, and run on a driver chosen for the database:

- SQLite: the standard library driver on one connection per thread, in autocommit. The
  database is in-process and answers in microseconds, so statements run inline.
- PostgreSQL: asyncpg on the event loop. No worker threads, each statement prepared once per
  connection, one round trip per statement, each its own transaction (an UPDATE … RETURNING
  is atomic on its own, so exactly one of any number of concurrent redemptions wins). The
  connections (`LoopConnections`) belong to the event loop that opened them at startup (the
  app's lifespan); a request on an event loop without them (a test client without lifespan)
  uses a connection of its own.

The authorization endpoint needs the client, the browser's session and the user's consent:
one statement reads all three.
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import sqlite3
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy.engine import URL

_NAMED = re.compile(r":([a-z_]+)")

# PostgreSQL connections per worker process. Each connection holds a statement only for one round
# trip, so a few serve many concurrent requests; commits of concurrent writers share WAL flushes.
PG_POOL_MIN, PG_POOL_MAX = 2, 20


@dataclass(frozen=True)
class Statement:
    sqlite: str
    pg: str
    names: tuple[str, ...]

    @classmethod
    def of(cls, sql: str) -> Statement:
        names: list[str] = []

        def number(match: re.Match) -> str:
            if match.group(1) not in names:
                names.append(match.group(1))
            return f"${names.index(match.group(1)) + 1}"

        return cls(sqlite=sql, pg=_NAMED.sub(number, sql), names=tuple(names))

    @classmethod
    def pair(cls, sqlite: str, pg: str) -> Statement:
        """One statement written in each dialect (the same `:name` parameters)."""
        numbered = cls.of(pg)
        return cls(sqlite=sqlite, pg=numbered.pg, names=numbered.names)


CLIENT = Statement.of(
    "SELECT client_id, name, type, state, secret_hash, redirect_uris, granted_scopes, sector_identifier_uri "
    "FROM clients WHERE client_id = :cid"
)
AUTHORIZE_CONTEXT = Statement.of(
    "SELECT c.client_id, c.name, c.type, c.state, c.secret_hash, c.redirect_uris, c.granted_scopes, "
    "c.sector_identifier_uri, s.user_id AS session_user_id, s.auth_time AS session_auth_time, "
    "k.scope AS consent_scope FROM clients c "
    "LEFT JOIN sessions s ON s.id_hash = :session AND s.expires_at > :now "
    "LEFT JOIN consents k ON k.user_id = s.user_id AND k.client_id = c.client_id "
    "WHERE c.client_id = :cid"
)
INTERACTION = Statement.of(
    "SELECT id_hash, kind, params, user_id, auth_time FROM interactions WHERE id_hash = :h AND expires_at > :now"
)
INSERT_INTERACTION = Statement.of(
    "INSERT INTO interactions (id_hash, kind, params, user_id, auth_time, created_at, expires_at) "
    "VALUES (:id_hash, :kind, :params, :user_id, :auth_time, :created_at, :expires_at)"
)
FINISH_INTERACTION = Statement.of("DELETE FROM interactions WHERE id_hash = :h RETURNING id_hash")
# The login form's POST: the interaction, the user the form names and, for an authorization
# request, its client with that user's remembered consent (`login_client_*`), in one statement.
_INTERACTION_FOR_LOGIN = (
    "SELECT i.id_hash, i.kind, i.params, i.user_id, i.auth_time, u.id AS login_user_id, "
    "u.password_hash AS login_password_hash, c.client_id AS login_client_client_id, c.name AS login_client_name, "
    "c.type AS login_client_type, c.state AS login_client_state, c.secret_hash AS login_client_secret_hash, "
    "c.redirect_uris AS login_client_redirect_uris, c.granted_scopes AS login_client_granted_scopes, "
    "c.sector_identifier_uri AS login_client_sector_identifier_uri, k.scope AS login_client_consent_scope "
    "FROM interactions i LEFT JOIN users u ON u.username = :name "
    "LEFT JOIN clients c ON c.client_id = {client_id} "
    "LEFT JOIN consents k ON k.user_id = u.id AND k.client_id = c.client_id "
    "WHERE i.id_hash = :h AND i.expires_at > :now"
)
INTERACTION_FOR_LOGIN = Statement.pair(
    _INTERACTION_FOR_LOGIN.format(client_id="json_extract(i.params, '$.client_id')"),
    _INTERACTION_FOR_LOGIN.format(client_id="(i.params ->> 'client_id')"),
)
_CLIENT_COLUMNS = (
    "client_id",
    "name",
    "type",
    "state",
    "secret_hash",
    "redirect_uris",
    "granted_scopes",
    "sector_identifier_uri",
    "consent_scope",
)
INSERT_SESSION = Statement.of(
    "INSERT INTO sessions (id_hash, user_id, auth_time, created_at, expires_at) "
    "VALUES (:id_hash, :user_id, :auth_time, :created_at, :expires_at)"
)
DELETE_SESSION = Statement.of("DELETE FROM sessions WHERE id_hash = :h")
# A successful login's writes: finish the interaction and, only for the request that finished it,
# end the browser's previous session (:old, or NULL), start the new one and write either the
# code's grant (:g_id not NULL) or the consent step's interaction (:n_id_hash not NULL).
# PostgreSQL: one data-modifying CTE. SQLite: the same statements in one transaction.
COMPLETE_LOGIN = Statement.of(
    "WITH f AS (DELETE FROM interactions WHERE id_hash = :h RETURNING id_hash), "
    "o AS (DELETE FROM sessions WHERE id_hash = :old AND EXISTS (SELECT 1 FROM f)), "
    "s AS (INSERT INTO sessions (id_hash, user_id, auth_time, created_at, expires_at) "
    "SELECT CAST(:s_id_hash AS TEXT), CAST(:s_user_id AS TEXT), CAST(:s_auth_time AS BIGINT), "
    "CAST(:s_created_at AS BIGINT), CAST(:s_expires_at AS BIGINT) FROM f), "
    "g AS (INSERT INTO grants (id, code_hash, client_id, user_id, redirect_uri, code_challenge, nonce, scope, "
    "auth_time, created_at, code_expires_at, code_used_at, revoked_at) "
    "SELECT CAST(:g_id AS TEXT), CAST(:g_code_hash AS TEXT), CAST(:g_client_id AS TEXT), CAST(:g_user_id AS TEXT), "
    "CAST(:g_redirect_uri AS TEXT), CAST(:g_code_challenge AS TEXT), CAST(:g_nonce AS TEXT), CAST(:g_scope AS TEXT), "
    "CAST(:g_auth_time AS BIGINT), CAST(:g_created_at AS BIGINT), CAST(:g_code_expires_at AS BIGINT), NULL, NULL "
    "FROM f WHERE CAST(:g_id AS TEXT) IS NOT NULL), "
    "n AS (INSERT INTO interactions (id_hash, kind, params, user_id, auth_time, created_at, expires_at) "
    "SELECT CAST(:n_id_hash AS TEXT), CAST(:n_kind AS TEXT), CAST(:n_params AS JSON), CAST(:n_user_id AS TEXT), "
    "CAST(:n_auth_time AS BIGINT), CAST(:n_created_at AS BIGINT), CAST(:n_expires_at AS BIGINT) "
    "FROM f WHERE CAST(:n_id_hash AS TEXT) IS NOT NULL) "
    "SELECT id_hash FROM f"
)
INSERT_GRANT = Statement.of(
    "INSERT INTO grants (id, code_hash, client_id, user_id, redirect_uri, code_challenge, nonce, scope, auth_time, "
    "created_at, code_expires_at, code_used_at, revoked_at) VALUES (:id, :code_hash, :client_id, :user_id, "
    ":redirect_uri, :code_challenge, :nonce, :scope, :auth_time, :created_at, :code_expires_at, NULL, NULL)"
)
# A code is redeemed only for the client that authenticates as its holder: the UPDATE checks the
# client in the same statement (active; a web client's secret digest, a native client's lack of
# one), so a request that client authentication refuses never consumes the code. The handler
# still decides with client_auth.verify on the client row (constant time); this comparison of
# SHA-256 digests only keeps the code for the genuine client.
_REDEEM_CODE = (
    "UPDATE grants SET code_used_at = :now WHERE code_hash = :h AND client_id = :cid AND code_used_at IS NULL "
    "AND code_expires_at > :now AND revoked_at IS NULL AND EXISTS (SELECT 1 FROM clients a "
    "WHERE a.client_id = :cid AND a.state = 'active' AND ((a.type = 'web' AND a.secret_hash = :sh) "
    "OR (a.type = 'native' AND CAST(:sh AS TEXT) IS NULL))) "
    "RETURNING id, user_id, redirect_uri, code_challenge, nonce, scope, auth_time"
)
# SQLite (no UPDATE inside a CTE): the redemption returns the client row too, as one JSON value.
REDEEM_CODE = Statement.of(
    _REDEEM_CODE + ", (SELECT json_object('client_id', client_id, 'name', name, 'type', type, 'state', state, "  # noqa: S608 - constant SQL
    "'secret_hash', secret_hash, 'redirect_uris', redirect_uris, 'granted_scopes', granted_scopes, "
    "'sector_identifier_uri', sector_identifier_uri) FROM clients WHERE client_id = :cid) AS client"
)
_GRANT_COLUMNS = ("id", "user_id", "redirect_uri", "code_challenge", "nonce", "scope", "auth_time")
# PostgreSQL: the client row and the redemption in one round trip (a data-modifying CTE).
CLIENT_AND_CODE = Statement.of(
    "WITH g AS (" + _REDEEM_CODE + ") SELECT c.client_id, c.name, c.type, c.state, c.secret_hash, "  # noqa: S608 - constant SQL, parameters bound
    "c.redirect_uris, c.granted_scopes, c.sector_identifier_uri, g.id AS grant_id, g.user_id AS grant_user_id, "
    "g.redirect_uri AS grant_redirect_uri, g.code_challenge AS grant_code_challenge, g.nonce AS grant_nonce, "
    "g.scope AS grant_scope, g.auth_time AS grant_auth_time FROM clients c LEFT JOIN g ON true WHERE c.client_id = :cid"
)
RETURN_CODE = Statement.of("UPDATE grants SET code_used_at = NULL WHERE id = :gid AND code_used_at = :now")
INSERT_REFRESH = Statement.of(
    "INSERT INTO refresh_tokens (token_hash, grant_id, created_at, expires_at, used_at) "
    "VALUES (:token_hash, :grant_id, :created_at, :expires_at, NULL)"
)
GRANT_WITH_USER = Statement.of(
    "SELECT g.id, g.client_id, g.scope, u.id AS user_id, u.name, u.given_name, u.family_name, u.email, "
    "u.student_number FROM grants g JOIN users u ON u.id = g.user_id WHERE g.id = :gid AND g.revoked_at IS NULL"
)


@lru_cache(maxsize=4096)
def _json_list(raw: str) -> tuple:
    """A client's JSON list column, decoded once per distinct value (immutable, so shareable)."""
    return tuple(json.loads(raw))


def _interaction(row: dict | None) -> dict | None:
    if row is not None and isinstance(row["params"], str):
        row["params"] = json.loads(row["params"])
    return row


@lru_cache(maxsize=256)
def _client_json(raw: str) -> dict:
    """A client row that SQLite returned as one JSON object, decoded once per distinct value.
    The cached dict is never handed out: callers get a copy (see _client_from_json)."""
    return _client(json.loads(raw))


def _client_from_json(raw: str) -> dict:
    return dict(_client_json(raw))


def _client(row: dict) -> dict:
    for key in ("redirect_uris", "granted_scopes"):
        value = row[key]
        row[key] = _json_list(value) if isinstance(value, str) else tuple(value)
    return row


class HotPath:
    """The hot statements, as the handlers need them."""

    def __init__(self, backend: SQLiteBackend | PostgresBackend) -> None:
        self.backend = backend

    async def start(self) -> None:
        await self.backend.start()

    async def stop(self) -> None:
        await self.backend.stop()

    async def client(self, client_id: str) -> dict | None:
        row = await self.backend.one(CLIENT, {"cid": client_id})
        return _client(row) if row is not None else None

    async def authorize_context(self, client_id: str, session_hash: str | None, now: int) -> dict | None:
        """The client (None if unknown), with the live session's user and auth_time and that
        user's remembered consent for this client (each None when absent)."""
        row = await self.backend.one(AUTHORIZE_CONTEXT, {"cid": client_id, "session": session_hash, "now": now})
        return _client(row) if row is not None else None

    # -- the sign-in pages: pending interactions, the password check's user, new sessions -------
    async def interaction(self, id_hash: str, now: int) -> dict | None:
        return _interaction(await self.backend.one(INTERACTION, {"h": id_hash, "now": now}))

    async def interaction_for_login(self, id_hash: str, now: int, username: str) -> dict | None:
        """The live interaction (None if gone) with what its login needs, read together: the user
        the form names (`login_user_id` and `login_password_hash`, None when no such user) and,
        for an authorization request, its client with that user's remembered consent
        (`login_client`, with `consent_scope`; None when the client is gone)."""
        params = {"h": id_hash, "now": now, "name": username}
        row = _interaction(await self.backend.one(INTERACTION_FOR_LOGIN, params))
        if row is not None:
            client = {col: row.pop(f"login_client_{col}") for col in _CLIENT_COLUMNS}
            row["login_client"] = _client(client) if client["client_id"] is not None else None
        return row

    async def create_interaction(self, row: dict) -> None:
        await self.backend.run(INSERT_INTERACTION, {**row, "params": json.dumps(row["params"], separators=(",", ":"))})

    async def finish_interaction(self, id_hash: str) -> bool:
        """Delete the interaction; True for the one caller that finished it."""
        return await self.backend.one(FINISH_INTERACTION, {"h": id_hash}) is not None

    async def complete_login(
        self,
        id_hash: str,
        session: dict,
        old_session_hash: str | None = None,
        *,
        grant: dict | None = None,
        interaction: dict | None = None,
    ) -> bool:
        """Finish the interaction `id_hash` and, only if this call finished it (True), replace the
        browser's session (`old_session_hash`, if any) by `session` and write the `grant` of the
        code or the next `interaction` (the consent step), atomically."""
        params_json = json.dumps(interaction["params"], separators=(",", ":")) if interaction is not None else None
        if isinstance(self.backend, PostgresBackend):
            params = {"h": id_hash, "old": old_session_hash}
            params.update({f"s_{k}": v for k, v in session.items()})
            for prefix, row, stmt in (("g_", grant, INSERT_GRANT), ("n_", interaction, INSERT_INTERACTION)):
                params.update(dict.fromkeys((prefix + name for name in stmt.names), None))
                if row is not None:
                    params.update({prefix + k: v for k, v in row.items()})
            params["n_params"] = params_json
            return await self.backend.one(COMPLETE_LOGIN, params) is not None
        then = [(INSERT_SESSION, session)]
        if old_session_hash is not None:
            then.insert(0, (DELETE_SESSION, {"h": old_session_hash}))
        if grant is not None:
            then.append((INSERT_GRANT, grant))
        if interaction is not None:
            then.append((INSERT_INTERACTION, {**interaction, "params": params_json}))
        return await self.backend.transaction((FINISH_INTERACTION, {"h": id_hash}), then)

    async def create_session(self, row: dict) -> None:
        await self.backend.run(INSERT_SESSION, row)

    async def delete_session(self, id_hash: str) -> None:
        await self.backend.run(DELETE_SESSION, {"h": id_hash})

    async def create_grant(self, row: dict) -> None:
        await self.backend.run(INSERT_GRANT, row)

    async def client_and_code(
        self, client_id: str, secret_digest: str | None, code_hash: str, now: int
    ) -> tuple[dict | None, dict | None]:
        """The client (None if unknown) and, if that client authenticates with `secret_digest`
        (None for a public client) and the code is its and live, the code's grant, consumed once
        (DESIGN 3.4): of any number of concurrent redemptions exactly one UPDATE matches."""
        params = {"h": code_hash, "cid": client_id, "now": now, "sh": secret_digest}
        if isinstance(self.backend, PostgresBackend):
            row = await self.backend.one(CLIENT_AND_CODE, params)
            if row is None:
                return None, None
            grant = {col: row.pop(f"grant_{col}") for col in _GRANT_COLUMNS}
            return _client(row), (grant if grant["id"] is not None else None)
        grant = await self.backend.one(REDEEM_CODE, params)
        if grant is None:  # refused: the client row alone, for the answer
            return await self.client(client_id), None
        return _client_from_json(grant.pop("client")), grant

    async def return_code(self, grant_id: str, now: int) -> None:
        """Undo a redemption made at `now` that the request was then refused for (rate limit)."""
        await self.backend.run(RETURN_CODE, {"gid": grant_id, "now": now})

    async def add_refresh(self, row: dict) -> None:
        await self.backend.run(INSERT_REFRESH, row)

    async def grant_with_user(self, grant_id: str) -> dict | None:
        """The grant (not revoked) joined with its user: one round trip for userinfo and records."""
        return await self.backend.one(GRANT_WITH_USER, {"gid": grant_id})


class SQLiteBackend:
    def __init__(self, path: str) -> None:
        self._path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, cached_statements=32)
            conn.execute("PRAGMA busy_timeout=10000")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    def close(self) -> None:
        with self._lock:
            conns, self._all = self._all, []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    async def one(self, stmt: Statement, params: dict[str, Any]) -> dict | None:
        cur = self._conn().execute(stmt.sqlite, params)
        try:
            rows = cur.fetchall()  # all rows: a RETURNING statement completes only when drained
            if not rows:
                return None
            return dict(zip([d[0] for d in cur.description], rows[0], strict=True))
        finally:
            cur.close()

    async def run(self, stmt: Statement, params: dict[str, Any]) -> None:
        self._conn().execute(stmt.sqlite, params).close()

    async def transaction(self, first: tuple[Statement, dict], then: list[tuple[Statement, dict]]) -> bool:
        """One transaction: `first` (a statement that returns a row or none) and, only if it
        returned a row, `then`; True if it did. One commit, however many statements."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute(first[0].sqlite, first[1])
            done = bool(cur.fetchall())
            cur.close()
            if done:
                for stmt, params in then:
                    conn.execute(stmt.sqlite, params).close()
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return done


class LoopConnections:
    """asyncpg connections of one event loop, lent for one statement at a time.

    asyncpg's Pool costs ~40 µs of CPU per statement on top of the statement's own ~55 µs (its
    acquire context and a shielded release task per use); a hot statement needs none of what that
    buys. Each statement is one autocommit statement that leaves no session state (no SET, LISTEN,
    cursor, advisory lock or open transaction), so a connection goes straight back to the idle
    list; one that failed or was interrupted mid-statement is closed, never lent again. Requests
    wait in order when all `size` connections are busy."""

    def __init__(self, dsn: str, size: int) -> None:
        self._dsn = dsn
        self._size = size
        self._idle: list[Any] = []
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._open = 0  # connections lent out or idle, plus those being opened
        self._closed = False

    async def open(self, count: int) -> None:
        for _ in range(count):
            self._idle.append(await self._connect())

    async def _connect(self) -> Any:
        import asyncpg

        self._open += 1
        try:
            return await asyncpg.connect(self._dsn)
        except BaseException:
            self._open -= 1
            raise

    async def call(self, method: str, sql: str, args: list[Any]) -> Any:
        import asyncpg

        conn = await self._take()
        try:
            result = await getattr(conn, method)(sql, *args)
        except asyncpg.PostgresError:
            self._give_back(conn)  # the server refused the statement; the connection is in step
            raise
        except BaseException:
            self._discard(conn)  # broken, or interrupted mid-statement
            raise
        self._give_back(conn)
        return result

    async def _take(self) -> Any:
        if self._closed:
            raise RuntimeError("the database connections are closed")
        while self._idle:
            conn = self._idle.pop()
            if not conn.is_closed():
                return conn
            self._open -= 1  # the server closed it while idle
        if self._open < self._size:
            return await self._connect()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._give_back(waiter.result())  # handed over just as the request gave up
            raise

    def _give_back(self, conn: Any) -> None:
        if self._closed or conn.is_closed():
            self._discard(conn)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        self._idle.append(conn)

    def _discard(self, conn: Any) -> None:
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
        self._give_back(conn)

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            self._open -= 1
            await conn.close()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(RuntimeError("the database connections are closed"))


class PostgresBackend:
    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._pools: dict[asyncio.AbstractEventLoop, LoopConnections] = {}

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        if loop not in self._pools:
            pool = LoopConnections(self._dsn, PG_POOL_MAX)
            await pool.open(PG_POOL_MIN)
            self._pools[loop] = pool

    async def stop(self) -> None:
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.close()

    def close(self) -> None:
        return None  # connections close with their event loop's lifespan

    async def one(self, stmt: Statement, params: dict[str, Any]) -> dict | None:
        row = await self._call("fetchrow", stmt, params)
        return dict(row) if row is not None else None

    async def run(self, stmt: Statement, params: dict[str, Any]) -> None:
        await self._call("execute", stmt, params)

    async def _call(self, method: str, stmt: Statement, params: dict[str, Any]) -> Any:
        args = [params[n] for n in stmt.names]
        pool = self._pools.get(asyncio.get_running_loop())
        if pool is not None:
            return await pool.call(method, stmt.pg, args)
        import asyncpg

        conn = await asyncpg.connect(self._dsn)  # an event loop without the app's lifespan
        try:
            return await getattr(conn, method)(stmt.pg, *args)
        finally:
            await conn.close()


def hot_path_for(url: URL) -> HotPath:
    if url.get_backend_name() == "postgresql":
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return HotPath(PostgresBackend(dsn))
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return HotPath(SQLiteBackend(url.database))
    raise ValueError(f"no hot path for {url.get_backend_name()} databases")
