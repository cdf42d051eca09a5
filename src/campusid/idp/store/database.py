"""Statements compiled for one dialect, and the narrow interface of the two drivers that run them.

SQLAlchemy Core builds and compiles each statement once, at start (`prepare`): the SQL text and
the order of its parameters come from `compile(dialect=…)`. A request then binds its values in
that order and hands the text to the driver itself (the standard library's sqlite3, or asyncpg),
with no SQLAlchemy execution machinery in between. Values the statement carries itself (a
literal state, a JSON path) are converted for the dialect once, here; JSON parameters are
encoded on the way in. Rows come back as plain tuples in the statement's column order.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

from sqlalchemy import JSON
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import Executable, Select

_USER = object()  # marks a parameter the caller supplies (as opposed to one the statement carries)


def _json_default(value: Any) -> Any:
    if isinstance(value, Mapping):  # the read-only mappings of shared rows
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def encode_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=_json_default)


class Prepared:
    """One statement compiled for one dialect: its SQL, how to order its parameters, its columns."""

    __slots__ = ("name", "sql", "columns", "json_columns", "write", "_plan")

    def __init__(
        self,
        name: str,
        sql: str,
        plan: Sequence[tuple[str, Any, bool]],
        columns: Sequence[str],
        json_columns: Sequence[int],
        write: bool,
    ) -> None:
        self.name = name
        self.sql = sql
        self._plan = tuple(plan)
        self.columns = tuple(columns)
        self.json_columns = tuple(json_columns)  # indexes of the result columns holding JSON text
        self.write = write  # may change data: never run twice on a doubt (see postgres.py)

    @property
    def parameters(self) -> tuple[str, ...]:
        """The names the caller must supply."""
        return tuple(dict.fromkeys(name for name, value, _ in self._plan if value is _USER))

    def args(self, values: Mapping[str, Any]) -> list[Any]:
        """The positional arguments for the driver, from named values."""
        out = []
        for name, value, is_json in self._plan:
            if value is _USER:
                value = values[name]
                if is_json and value is not None:
                    value = encode_json(value)
            out.append(value)
        return out

    def __repr__(self) -> str:
        return f"<Prepared {self.name}>"


def _result_columns(stmt: Executable) -> list[tuple[str, object]]:
    """(name, type) of each result column: a column's own name even where the SQL labels it to
    tell two tables apart (rows are built by position)."""
    # INSERT, UPDATE, DELETE: their RETURNING columns
    columns = stmt.selected_columns if isinstance(stmt, Select) else stmt.exported_columns
    out = []
    for key, column in zip(columns.keys(), columns, strict=True):
        name = getattr(column, "name", None)
        out.append((name if isinstance(name, str) else key, column.type))
    return out


def prepare(name: str, stmt: Executable, dialect: Dialect, *, write: bool | None = None) -> Prepared:
    """Compile `stmt` for `dialect`. `write` defaults to "anything but a SELECT"; a SELECT whose
    common table expressions change data must say write=True."""
    compiled = stmt.compile(dialect=dialect)
    plan = []
    # positiontup and binds are the compiler's internals, not a public API: pyproject.toml pins
    # SQLAlchemy's minor version for them, and tests/idp/store/test_store_schema.py checks the result.
    for key in compiled.positiontup or ():
        bind = compiled.binds[key]
        if bind.required or bind.callable is not None:
            plan.append((key, _USER, isinstance(bind.type, JSON)))
            continue
        # A value written into the statement (a literal, a JSON path): converted for the dialect
        # once, as SQLAlchemy's execution would convert it on every call.
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        plan.append((key, processor(bind.value) if processor else bind.value, False))
    columns = _result_columns(stmt)
    return Prepared(
        name,
        compiled.string,
        plan,
        [name for name, _ in columns],
        [i for i, (_, type_) in enumerate(columns) if isinstance(type_, JSON)],
        write=not isinstance(stmt, Select) if write is None else write,
    )


def decode_json(row: Sequence[Any], q: Prepared) -> list[Any]:
    """`row` with its JSON columns decoded."""
    values = list(row)
    for i in q.json_columns:
        if isinstance(values[i], str):
            values[i] = json.loads(values[i])
    return values


class Queries(ABC):
    """Running prepared statements: what a connection, or a transaction on one, can do."""

    @abstractmethod
    async def fetch_one(self, q: Prepared, values: Mapping[str, Any] = {}) -> Sequence[Any] | None:  # noqa: B006 - never mutated
        """The first row, or None."""

    @abstractmethod
    async def fetch_all(self, q: Prepared, values: Mapping[str, Any] = {}) -> list[Sequence[Any]]:  # noqa: B006
        """Every row."""

    @abstractmethod
    async def execute(self, q: Prepared, values: Mapping[str, Any] = {}) -> int:  # noqa: B006
        """Run a statement that returns no rows; the number of rows it changed."""

    async def execute_many(self, q: Prepared, rows: Sequence[Mapping[str, Any]]) -> None:
        for values in rows:
            await self.execute(q, values)


class Database(Queries):
    """One database: statements run each on its own (autocommit), or together in `transaction()`."""

    dialect: Dialect

    def prepare(self, name: str, stmt: Executable, *, write: bool | None = None) -> Prepared:
        return prepare(name, stmt, self.dialect, write=write)

    @abstractmethod
    def transaction(self) -> AbstractAsyncContextManager[Queries]:
        """Statements that commit together or not at all."""

    async def checkpoint(self) -> None:
        """After a burst of writes (a housekeeping batch): what the database should tidy up now
        rather than in a later request's commit. Nothing by default (PostgreSQL's checkpoints are
        the server's own background work); SQLite's WAL checkpoint (sqlite.py)."""

    async def start(self) -> None:
        """Open what the running event loop needs (connections); idempotent."""

    async def stop(self) -> None:
        """Close what `start` opened on the running event loop."""

    def close(self) -> None:
        """Release everything (at the end of the process or test)."""
