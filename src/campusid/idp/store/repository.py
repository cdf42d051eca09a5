"""What every repository of the store shares: its database, its prepared statements, and the
makers that turn a statement's rows into the frozen rows of rows.py.

A repository owns the statements of one part of the domain: they are module-level SQLAlchemy
Core constructs of its module, prepared once in its constructor into attributes, and its methods
run them by those attributes. A step that belongs to another repository's transaction (ending a
session revokes its grants) is a method of the repository that owns the statement, called with
the open transaction (`tx`), so each statement lives in exactly one place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import fields
from functools import lru_cache
from types import MappingProxyType
from typing import Any, TypeVar

from sqlalchemy import bindparam

from campusid.idp.store.database import Database, Prepared
from campusid.idp.store.errors import StoreError
from campusid.idp.store.rows import Client

R = TypeVar("R")


def typed(name: str, like) -> bindparam:
    """A named parameter typed like a column (so PostgreSQL gets the cast it needs)."""
    return bindparam(name, type_=like.type)


class Repository:
    """Statements of one part of the domain, prepared for one database, and the methods that run them."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def prepared(self) -> list[Prepared]:
        """Every statement this repository runs, compiled for its database: its Prepared
        attributes, and those of its dicts of variants (one per combination of filters)."""
        out: list[Prepared] = []
        for value in vars(self).values():
            if isinstance(value, Prepared):
                out.append(value)
            elif isinstance(value, dict):
                out.extend(v for v in value.values() if isinstance(v, Prepared))
        return out

    async def _rows(self, q: Prepared, make: Callable[[Sequence], R], values: dict | None = None) -> list[R]:
        return [make(r) for r in await self.db.fetch_all(q, values or {})]

    async def _row(self, q: Prepared, make: Callable[[Sequence], R], values: dict) -> R | None:
        row = await self.db.fetch_one(q, values)
        return make(row) if row is not None else None


def check_columns(q: Prepared, cls: type) -> Prepared:
    """`q`, checked now (at start) to return exactly the fields of `cls`, which is built from its
    rows by position."""
    names = tuple(f.name for f in fields(cls))
    if q.columns != names:
        raise StoreError(f"{q.name} returns {q.columns}, not the fields of {cls.__name__}: {names}")
    return q


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    return value


CLIENT_WIDTH = len(fields(Client))
_REQUIRE_MFA_AT = [f.name for f in fields(Client)].index("require_mfa")
# The client's JSON columns, by name (a column added before them moves them).
_CLIENT_JSON = (
    "redirect_uris",
    "scopes",
    "granted_scopes",
    "justifications",
    "revision",
    "grant_types",
    "granted_grant_types",
    "post_logout_redirect_uris",
    "services",
)
_CLIENT_JSON_AT = tuple(i for i, f in enumerate(fields(Client)) if f.name in _CLIENT_JSON)
# The lists of a registration the app's own face does not have (an OIDC app's CAS services, a CAS
# app's redirect URIs): empty, not None.
_REGISTRATION_LISTS = ("redirect_uris", "grant_types", "granted_grant_types", "post_logout_redirect_uris", "services")
_LISTS_AT = tuple(i for i, f in enumerate(fields(Client)) if f.name in _REGISTRATION_LISTS)


@lru_cache(maxsize=1024)
def _client(raw: tuple) -> Client:
    """A client row, decoded once per distinct row: every request of an app reads the same row,
    and its JSON columns cost more to decode than the statement costs to run. Immutable, so
    one object serves every request (an edit is a new row, hence a new entry). One cache for the
    whole process, whichever repository's statement read the row (apps, grants, sessions)."""
    values = list(raw)
    for i in _CLIENT_JSON_AT:
        values[i] = _frozen(_json(values[i]))
    values[_REQUIRE_MFA_AT] = bool(values[_REQUIRE_MFA_AT])  # SQLite hands a Boolean back as 0 or 1
    for i in _LISTS_AT:
        if values[i] is None:
            values[i] = ()
    return Client(*values)


def row_maker(cls: type[R], q: Prepared, start: int = 0) -> Callable[[Sequence], R]:
    """Build `cls` from columns start… of `q`'s rows, checking now that they are its fields."""
    names = tuple(f.name for f in fields(cls))
    stop = start + len(names)
    if q.columns[start:stop] != names:
        raise StoreError(f"{q.name} returns {q.columns[start:stop]}, not the fields of {cls.__name__}: {names}")
    if cls is Client:
        return lambda row: _client(tuple(row[start:stop]))
    json_at = tuple(i - start for i in q.json_columns if start <= i < stop)

    def make(row: Sequence) -> R:
        values = list(row[start:stop])
        for i in json_at:
            values[i] = _json(values[i])
        return cls(*values)

    return make
