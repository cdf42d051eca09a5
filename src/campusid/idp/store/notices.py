"""The notices repository: the logout notices of every face, queued when sessions end.

Each notice is its face's (`face`: "oidc" back-channel logout, "cas" single logout) and is
delivered by that face's sender (idp/logout_delivery.py), which claims only its own. A face that
tells per ticket rather than per session (CAS) puts where to (`target`) and what to name
(`session_index`) in the notice itself; the other faces' parts of ending a session run in the same
transaction (`add_face`: their notices queued, what lived in the session ended).

OpenID Connect Back-Channel Logout 1.0: when a session ends, every app that received tokens in it
and registered a `backchannel_logout_uri` is to get a logout token. The notices are rows of
`logout_notices`, queued in the same transaction that ends the session (or disables the account,
or suspends the app: `enqueue_for_session`, `_for_user`, `_for_client`, called with that
transaction), so a notice exists exactly when the session has ended and a restart loses none.
Every worker drains the table: `claim` is one conditional UPDATE (with FOR UPDATE SKIP LOCKED on
PostgreSQL) that moves each due notice's `next_at` past the attempt and stamps it with the
claimer's random `claim`, so of any number of workers exactly one sends it; the outcome
(`delivered`, `retry`, `failed`) is conditional on that claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import BigInteger, Integer, and_, bindparam, delete, exists, insert, literal, select, update

from campusid.idp.store.database import Database, Queries
from campusid.idp.store.grants import grants_of_session
from campusid.idp.store.repository import Repository
from campusid.idp.store.schema import grants, logout_notices, oidc_registrations

_n = logout_notices.c
_NOW = bindparam("now", type_=BigInteger())


@dataclass(frozen=True)
class LogoutNotice:
    """One notice being delivered: to the app `client_id`, that the session `sid` of `user_id`
    ended; `attempts` counts this one."""

    id: int
    client_id: str
    user_id: str
    sid: str
    created_at: int
    attempts: int
    claim: str
    target: str | None = None
    session_index: str | None = None


class SessionEnds(Protocol):
    """A face's part of ending sessions, run in the transaction that ends them (before the grants
    are revoked): queue its notices, end what lived in the sessions."""

    async def session_ended(self, tx: Queries, user_id: str, sid: str, now: int) -> None: ...

    async def user_disabled(self, tx: Queries, user_id: str, now: int) -> None: ...

    async def client_suspended(self, tx: Queries, client_id: str, now: int) -> None: ...


def _enqueue(which) -> insert:
    """INSERT … SELECT of one notice per (app, session) among the grants `which` selects that
    delivered tokens (the code was redeemed), are not revoked yet and whose app has a
    back-channel logout URI; a notice already waiting for that app and session is not doubled."""
    pairs = (
        select(grants.c.client_id, grants.c.user_id, grants.c.sid, _NOW, _NOW, literal(0, Integer()))
        .select_from(grants.join(oidc_registrations, oidc_registrations.c.client_id == grants.c.client_id))
        .where(
            which,
            grants.c.sid.is_not(None),
            grants.c.revoked_at.is_(None),
            grants.c.code_used_at.is_not(None),
            oidc_registrations.c.backchannel_logout_uri.is_not(None),
            ~exists().where(_n.client_id == grants.c.client_id, _n.sid == grants.c.sid, _n.failed_at.is_(None)),
        )
        .distinct()
    )
    return insert(logout_notices).from_select(
        ["client_id", "user_id", "sid", "created_at", "next_at", "attempts"], pairs
    )


# Run before the grants are revoked, in the same transaction (the revocation is what they read).
ENQUEUE_SESSION_LOGOUT_NOTICES = _enqueue(grants_of_session)
ENQUEUE_USER_LOGOUT_NOTICES = _enqueue(grants.c.user_id == bindparam("uid"))
ENQUEUE_CLIENT_LOGOUT_NOTICES = _enqueue(grants.c.client_id == bindparam("cid"))

_DUE = and_(_n.face == bindparam("face"), _n.failed_at.is_(None), _n.next_at <= _NOW)
CLAIM_LOGOUT_NOTICES = (
    update(logout_notices)
    .where(
        _DUE,
        _n.id.in_(
            select(_n.id)
            .where(_DUE)
            .order_by(_n.next_at)
            .limit(bindparam("batch"))
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        ),
    )
    .values(
        claim=bindparam("claimer", type_=_n.claim.type),
        attempts=_n.attempts + 1,
        next_at=bindparam("lease_until", type_=BigInteger()),
    )
    .returning(
        _n.id, _n.client_id, _n.user_id, _n.sid, _n.created_at, _n.attempts, _n.claim, _n.target, _n.session_index
    )
)
# A worker's poll: is anything due? (a read, so an empty queue costs no write lock on SQLite)
LOGOUT_NOTICE_DUE = select(_n.id).where(_DUE).limit(1)
_CLAIMED = and_(_n.id == bindparam("id"), _n.claim == bindparam("claimer"))
LOGOUT_NOTICE_DELIVERED = delete(logout_notices).where(_CLAIMED)
LOGOUT_NOTICE_RETRY = (
    update(logout_notices).where(_CLAIMED).values(next_at=bindparam("retry_at", type_=BigInteger()), claim=None)
)
LOGOUT_NOTICE_FAILED = update(logout_notices).where(_CLAIMED).values(failed_at=_NOW, claim=None)
# Operators and tests: what is still to be sent, soonest first (served by ix_logout_notices_next_at).
PENDING_LOGOUT_NOTICES = (
    select(_n.id, _n.client_id, _n.user_id, _n.sid, _n.created_at, _n.attempts, _n.next_at)
    .where(_n.failed_at.is_(None))
    .order_by(_n.next_at)
    .limit(bindparam("limit"))
)
FAILED_LOGOUT_NOTICES = (
    select(_n.id, _n.client_id, _n.user_id, _n.sid, _n.created_at, _n.attempts, _n.failed_at)
    .where(_n.failed_at.is_not(None))
    .order_by(_n.failed_at.desc())
    .limit(bindparam("limit"))
)


class Notices(Repository):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._enqueue_session = db.prepare("ENQUEUE_SESSION_LOGOUT_NOTICES", ENQUEUE_SESSION_LOGOUT_NOTICES)
        self._enqueue_user = db.prepare("ENQUEUE_USER_LOGOUT_NOTICES", ENQUEUE_USER_LOGOUT_NOTICES)
        self._enqueue_client = db.prepare("ENQUEUE_CLIENT_LOGOUT_NOTICES", ENQUEUE_CLIENT_LOGOUT_NOTICES)
        self._claim = db.prepare("CLAIM_LOGOUT_NOTICES", CLAIM_LOGOUT_NOTICES)
        self._due = db.prepare("LOGOUT_NOTICE_DUE", LOGOUT_NOTICE_DUE)
        self._delivered = db.prepare("LOGOUT_NOTICE_DELIVERED", LOGOUT_NOTICE_DELIVERED)
        self._retry = db.prepare("LOGOUT_NOTICE_RETRY", LOGOUT_NOTICE_RETRY)
        self._failed = db.prepare("LOGOUT_NOTICE_FAILED", LOGOUT_NOTICE_FAILED)
        self._pending = db.prepare("PENDING_LOGOUT_NOTICES", PENDING_LOGOUT_NOTICES)
        self._given_up = db.prepare("FAILED_LOGOUT_NOTICES", FAILED_LOGOUT_NOTICES)
        self._faces: list[SessionEnds] = []

    def add_face(self, face: SessionEnds) -> None:
        """Another face's part of ending sessions (store.py adds CAS's)."""
        self._faces.append(face)

    # -- queued by whoever ends a session, in their transaction --------------------------------
    async def enqueue_for_session(self, tx: Queries, user_id: str, sid: str, now: int) -> int:
        queued = await tx.execute(self._enqueue_session, {"uid": user_id, "sid": sid, "now": now})
        for face in self._faces:
            await face.session_ended(tx, user_id, sid, now)
        return queued

    async def enqueue_for_user(self, tx: Queries, user_id: str, now: int) -> int:
        queued = await tx.execute(self._enqueue_user, {"uid": user_id, "now": now})
        for face in self._faces:
            await face.user_disabled(tx, user_id, now)
        return queued

    async def enqueue_for_client(self, tx: Queries, client_id: str, now: int) -> int:
        queued = await tx.execute(self._enqueue_client, {"cid": client_id, "now": now})
        for face in self._faces:
            await face.client_suspended(tx, client_id, now)
        return queued

    # -- delivery ------------------------------------------------------------------------------
    async def due(self, now: int, face: str = "oidc") -> bool:
        return await self.db.fetch_one(self._due, {"now": now, "face": face}) is not None

    async def claim(
        self, claim: str, now: int, lease_until: int, batch: int = 50, face: str = "oidc"
    ) -> list[LogoutNotice]:
        """Take at most `batch` due notices of `face` for this caller (`claim`, a fresh random
        value), counting the attempt and hiding them from other workers until `lease_until`."""
        values = {"claimer": claim, "now": now, "lease_until": lease_until, "batch": batch, "face": face}
        rows = await self.db.fetch_all(self._claim, values)
        return sorted((LogoutNotice(*row) for row in rows), key=lambda n: n.id)

    async def delivered(self, notice: LogoutNotice) -> bool:
        return bool(await self.db.execute(self._delivered, {"id": notice.id, "claimer": notice.claim}))

    async def retry(self, notice: LogoutNotice, next_at: int) -> bool:
        values = {"id": notice.id, "claimer": notice.claim, "retry_at": next_at}
        return bool(await self.db.execute(self._retry, values))

    async def failed(self, notice: LogoutNotice, now: int) -> bool:
        values = {"id": notice.id, "claimer": notice.claim, "now": now}
        return bool(await self.db.execute(self._failed, values))

    # -- operators and tests -------------------------------------------------------------------
    async def pending(self, limit: int = 100) -> list[tuple]:
        """(id, client_id, user_id, sid, created_at, attempts, next_at) of notices still to send."""
        return [tuple(r) for r in await self.db.fetch_all(self._pending, {"limit": limit})]

    async def given_up(self, limit: int = 100) -> list[tuple]:
        """(id, client_id, user_id, sid, created_at, attempts, failed_at) of notices given up on."""
        return [tuple(r) for r in await self.db.fetch_all(self._given_up, {"limit": limit})]
