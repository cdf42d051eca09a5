"""A thin DBAPI path for the handful of statements on the request hot path.

SQLAlchemy Core builds and executes every other statement. For the few that run on every
authorize, token and userinfo request, its per-execution machinery costs more than the
round trip itself, so these go straight to the pooled DBAPI connection with SQL written once
in `:name` style (sqlite3's own; rewritten to `%(name)s` for psycopg). Same pool, same
transactions, same results as dicts.
"""

from __future__ import annotations

import json
import re

from sqlalchemy.engine import Engine

_NAMED = re.compile(r":([a-z_]+)")


class FastSQL:
    def __init__(self, engine: Engine, json_columns: tuple[str, ...] = ()) -> None:
        self._engine = engine
        self._pg = engine.dialect.name == "postgresql"
        self._json = set(json_columns)

    def prepare(self, sql: str) -> str:
        return _NAMED.sub(r"%(\1)s", sql) if self._pg else sql

    def _row(self, cur, row) -> dict:
        out = {d[0]: v for d, v in zip(cur.description, row, strict=True)}
        for key in self._json & out.keys():
            if isinstance(out[key], str):
                out[key] = json.loads(out[key])
        return out

    def _first(self, cur) -> dict | None:
        row = cur.fetchone() if cur.description else None
        return self._row(cur, row) if row is not None else None

    def one(self, sql: str, params: dict, write: bool = False) -> dict | None:
        """Run one statement as its own transaction and return its first row."""
        return self._execute(sql, params, self._first)

    def run(self, sql: str, params: dict) -> int:
        return self._execute(sql, params, lambda cur: cur.rowcount)

    def _execute(self, sql: str, params: dict, result):
        conn = self._engine.raw_connection()
        try:
            if self._pg:
                # One statement is one transaction: autocommit saves the BEGIN and COMMIT round
                # trips (an UPDATE … RETURNING is atomic on its own). Restored before the
                # connection goes back to the pool, where SQLAlchemy expects transactions.
                conn.dbapi_connection.autocommit = True
            cur = conn.cursor()
            try:
                cur.execute(sql, params)
                out = result(cur)
            finally:
                cur.close()
            if not self._pg:
                conn.commit()
            return out
        except BaseException:
            if not self._pg:
                conn.rollback()
            raise
        finally:
            if self._pg:
                conn.dbapi_connection.autocommit = False
            conn.close()
