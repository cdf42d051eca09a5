"""Repositories: each a handful of named queries on one table (or a join), nothing more.

Protocol code never builds SQL. Atomic steps that decide security outcomes (consume a code,
rotate a refresh token, move an app between review states) are single conditional UPDATEs,
so exactly one of any number of concurrent callers wins, on any number of workers. The
statements of the request hot path (issue and redeem a code, userinfo) are in `hot.py`.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import and_, bindparam, delete, insert, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from campusid.idp.store.schema import (
    client_events,
    clients,
    consents,
    grades,
    grants,
    interactions,
    refresh_tokens,
    sessions,
    signing_keys,
    users,
)


class Conflict(Exception):
    """A unique value is taken."""


def _one(engine: Engine, stmt, params: dict | None = None) -> dict | None:
    with engine.connect() as conn:
        row = conn.execute(stmt, params).mappings().first()
    return dict(row) if row is not None else None


def _all(engine: Engine, stmt) -> list[dict]:
    with engine.connect() as conn:
        return [dict(r) for r in conn.execute(stmt).mappings()]


def _write(engine: Engine, stmt, params: dict | list | None = None) -> int:
    with engine.begin() as conn:
        return conn.execute(stmt, params).rowcount


def _returning(engine: Engine, stmt, params: dict) -> dict | None:
    with engine.begin() as conn:
        row = conn.execute(stmt, params).mappings().first()
    return dict(row) if row is not None else None


# Statements on the request hot path are built once: SQLAlchemy then reuses their compiled form,
# and a request pays only for binding parameters and one round trip.
_USER_BY_NAME = select(users).where(users.c.username == bindparam("name"))
_USER_BY_ID = select(users).where(users.c.id == bindparam("uid"))
_CLIENT = select(clients).where(clients.c.client_id == bindparam("cid"))
_SESSION = select(sessions).where(and_(sessions.c.id_hash == bindparam("h"), sessions.c.expires_at > bindparam("now")))
_CONSENT = select(consents.c.scope).where(
    and_(consents.c.user_id == bindparam("uid"), consents.c.client_id == bindparam("cid"))
)
_USE_REFRESH = (
    update(refresh_tokens)
    .where(
        and_(
            refresh_tokens.c.token_hash == bindparam("h"),
            refresh_tokens.c.used_at.is_(None),
            refresh_tokens.c.expires_at > bindparam("now"),
        )
    )
    .values(used_at=bindparam("used"))
    .returning(*refresh_tokens.c)
)


class UserRepo:
    def __init__(self, engine: Engine) -> None:
        self._e = engine

    def add(self, **row) -> dict:
        try:
            _write(self._e, insert(users).values(**row))
        except IntegrityError:
            raise Conflict("a user with that username or student number exists") from None
        return row

    def by_username(self, username: str) -> dict | None:
        return _one(self._e, _USER_BY_NAME, {"name": username})

    def by_id(self, user_id: str) -> dict | None:
        return _one(self._e, _USER_BY_ID, {"uid": user_id})

    def by_student_number(self, number: str) -> dict | None:
        return _one(self._e, select(users).where(users.c.student_number == number))

    def set_password_hash(self, user_id: str, password_hash: str) -> None:
        _write(self._e, update(users).where(users.c.id == user_id).values(password_hash=password_hash))

    def set_role(self, user_id: str, role: str) -> None:
        _write(self._e, update(users).where(users.c.id == user_id).values(role=role))

    def list(self) -> list[dict]:
        return _all(self._e, select(users).order_by(users.c.username))


class ClientRepo:
    def __init__(self, engine: Engine) -> None:
        self._e = engine

    def create(self, row: dict, event: dict) -> None:
        try:
            with self._e.begin() as conn:
                conn.execute(insert(clients).values(**row))
                conn.execute(insert(client_events).values(**event))
        except IntegrityError:
            raise Conflict("a client with that client_id exists") from None

    def get(self, client_id: str) -> dict | None:
        return _one(self._e, _CLIENT, {"cid": client_id})

    def transition(self, client_id: str, from_states: Iterable[str], values: dict, event: dict) -> bool:
        """Apply `values` only while the app is in one of `from_states`; log the event. Atomic."""
        with self._e.begin() as conn:
            changed = conn.execute(
                update(clients)
                .where(and_(clients.c.client_id == client_id, clients.c.state.in_(list(from_states))))
                .values(**values)
            ).rowcount
            if changed:
                conn.execute(insert(client_events).values(**event))
        return bool(changed)

    def update_revision(
        self, client_id: str, from_revision_states: Iterable[str | None], values: dict, event: dict
    ) -> bool:
        """Change an active app's pending revision only while it is in one of the given states
        (None: no revision pending); log the event. Atomic, like `transition`."""
        wanted = list(from_revision_states)
        named = [s for s in wanted if s is not None]
        cond = clients.c.revision_state.in_(named)
        if None in wanted:
            cond = or_(cond, clients.c.revision_state.is_(None))
        with self._e.begin() as conn:
            changed = conn.execute(
                update(clients)
                .where(and_(clients.c.client_id == client_id, clients.c.state == "active", cond))
                .values(**values)
            ).rowcount
            if changed:
                conn.execute(insert(client_events).values(**event))
        return bool(changed)

    def with_revision(self, revision_states: Iterable[str]) -> list[dict]:
        return _all(self._e, select(clients).where(clients.c.revision_state.in_(list(revision_states))))

    def events(self, client_id: str) -> list[dict]:
        return _all(
            self._e,
            select(client_events)
            .where(client_events.c.client_id == client_id)
            .order_by(client_events.c.at, client_events.c.id),
        )

    def all_events(self, limit: int = 200) -> list[dict]:
        return _all(self._e, select(client_events).order_by(client_events.c.id.desc()).limit(limit))

    def list(self, owner_id: str | None = None, states: Iterable[str] | None = None) -> list[dict]:
        stmt = select(clients)
        if owner_id is not None:
            stmt = stmt.where(clients.c.owner_id == owner_id)
        if states is not None:
            stmt = stmt.where(clients.c.state.in_(list(states)))
        return _all(self._e, stmt.order_by(clients.c.updated_at, clients.c.client_id))


class KeyRepo:
    def __init__(self, engine: Engine) -> None:
        self._e = engine

    def add(self, **row) -> None:
        _write(self._e, insert(signing_keys).values(**row))

    def all(self) -> list[dict]:
        return _all(self._e, select(signing_keys).order_by(signing_keys.c.activates_at, signing_keys.c.kid))

    def delete(self, kids: Iterable[str]) -> None:
        kids = list(kids)
        if kids:
            _write(self._e, delete(signing_keys).where(signing_keys.c.kid.in_(kids)))


class SessionRepo:
    def __init__(self, engine: Engine) -> None:
        self._e = engine

    def get(self, id_hash: str, now: int) -> dict | None:
        return _one(self._e, _SESSION, {"h": id_hash, "now": now})

    def delete(self, id_hash: str) -> None:
        _write(self._e, delete(sessions).where(sessions.c.id_hash == id_hash))

    def purge(self, now: int) -> None:
        _write(self._e, delete(sessions).where(sessions.c.expires_at <= now))


class InteractionRepo:
    """Pending interactions are created, read and finished on the hot path (`hot.py`)."""

    def __init__(self, engine: Engine) -> None:
        self._e = engine

    def purge(self, now: int) -> None:
        _write(self._e, delete(interactions).where(interactions.c.expires_at <= now))


class GrantRepo:
    """Authorization grants: one row per issued code, and the refresh tokens that continue it."""

    def __init__(self, engine: Engine) -> None:
        self._e = engine

    def by_code(self, code_hash: str) -> dict | None:
        return _one(self._e, select(grants).where(grants.c.code_hash == code_hash))

    def get(self, grant_id: str) -> dict | None:
        return _one(self._e, select(grants).where(grants.c.id == grant_id))

    def revoke(self, grant_id: str, now: int) -> None:
        with self._e.begin() as conn:
            conn.execute(
                update(grants)
                .where(and_(grants.c.id == grant_id, grants.c.revoked_at.is_(None)))
                .values(revoked_at=now, code_used_at=now)
            )
            conn.execute(
                update(refresh_tokens)
                .where(and_(refresh_tokens.c.grant_id == grant_id, refresh_tokens.c.used_at.is_(None)))
                .values(used_at=now)
            )

    def use_refresh(self, token_hash: str, now: int) -> dict | None:
        """Rotate: mark the refresh token used; the one caller whose UPDATE matched gets its row."""
        return _returning(self._e, _USE_REFRESH, {"h": token_hash, "now": now, "used": now})

    def refresh_by_hash(self, token_hash: str) -> dict | None:
        return _one(self._e, select(refresh_tokens).where(refresh_tokens.c.token_hash == token_hash))


class ConsentRepo:
    def __init__(self, engine: Engine) -> None:
        self._e = engine

    def get(self, user_id: str, client_id: str) -> set[str]:
        row = _one(self._e, _CONSENT, {"uid": user_id, "cid": client_id})
        return set(row["scope"].split()) if row else set()

    def remember(self, user_id: str, client_id: str, scopes: Iterable[str], now: int) -> None:
        scope = " ".join(sorted(set(scopes) | self.get(user_id, client_id)))
        with self._e.begin() as conn:
            changed = conn.execute(
                update(consents)
                .where(and_(consents.c.user_id == user_id, consents.c.client_id == client_id))
                .values(scope=scope, updated_at=now)
            ).rowcount
            if not changed:
                conn.execute(insert(consents).values(user_id=user_id, client_id=client_id, scope=scope, updated_at=now))


class GradeRepo:
    def __init__(self, engine: Engine) -> None:
        self._e = engine

    def for_student(self, student_number: str) -> list[dict]:
        cols = [grades.c[n] for n in ("course_code", "course_name", "term", "credits", "score", "grade_point")]
        return _all(
            self._e,
            select(*cols)
            .where(grades.c.student_number == student_number)
            .order_by(grades.c.term, grades.c.course_code),
        )

    def upsert_all(self, rows: list[dict]) -> int:
        """Insert or replace every row in one transaction: all or nothing."""
        with self._e.begin() as conn:
            for row in rows:
                conn.execute(
                    delete(grades).where(
                        and_(
                            grades.c.student_number == row["student_number"],
                            grades.c.course_code == row["course_code"],
                            grades.c.term == row["term"],
                        )
                    )
                )
            if rows:
                conn.execute(insert(grades), rows)
        return len(rows)
