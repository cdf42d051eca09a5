"""The back-channel logout queue's statements and the store's methods for it (a mixin of `Store`).

OpenID Connect Back-Channel Logout 1.0: when a session ends, every app that received tokens in it
and registered a `backchannel_logout_uri` is to get a logout token. The notices are rows of
`logout_notices`, written in the same transaction that ends the session (or disables the account,
or suspends the app), so a notice exists exactly when the session has ended and a restart loses
none. Every worker drains the table: `claim_logout_notices` is one conditional UPDATE (with
FOR UPDATE SKIP LOCKED on PostgreSQL) that moves each due notice's `next_at` past the attempt and
stamps it with the claimer's random `claim`, so of any number of workers exactly one sends it;
the outcome (`logout_notice_delivered`, `_retry`, `_failed`) is conditional on that claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import BigInteger, Integer, and_, bindparam, delete, exists, insert, literal, select, update

from campusid.idp.store.database import Queries
from campusid.idp.store.rows import ClientEvent
from campusid.idp.store.schema import clients, grants, logout_notices, refresh_tokens

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


def _enqueue(which) -> insert:
    """INSERT … SELECT of one notice per (app, session) among the grants `which` selects that
    delivered tokens (the code was redeemed), are not revoked yet and whose app has a
    back-channel logout URI; a notice already waiting for that app and session is not doubled."""
    pairs = (
        select(grants.c.client_id, grants.c.user_id, grants.c.sid, _NOW, _NOW, literal(0, Integer()))
        .select_from(grants.join(clients, clients.c.client_id == grants.c.client_id))
        .where(
            which,
            grants.c.sid.is_not(None),
            grants.c.revoked_at.is_(None),
            grants.c.code_used_at.is_not(None),
            clients.c.backchannel_logout_uri.is_not(None),
            ~exists().where(_n.client_id == grants.c.client_id, _n.sid == grants.c.sid, _n.failed_at.is_(None)),
        )
        .distinct()
    )
    return insert(logout_notices).from_select(
        ["client_id", "user_id", "sid", "created_at", "next_at", "attempts"], pairs
    )


# The grants of one session: by its user and its sid, the two columns of ix_grants_user_id_sid
# (there is no index on sid alone), so whoever ends a session says whose it was. Ending a session
# queues its notices here and revokes its grants (store/statements.py) with this same condition.
grants_of_session = and_(grants.c.user_id == bindparam("uid"), grants.c.sid == bindparam("sid"))

# Written before the grants are revoked, in the same transaction (the revocation is what they read).
ENQUEUE_SESSION_LOGOUT_NOTICES = _enqueue(grants_of_session)
ENQUEUE_USER_LOGOUT_NOTICES = _enqueue(grants.c.user_id == bindparam("uid"))
ENQUEUE_CLIENT_LOGOUT_NOTICES = _enqueue(grants.c.client_id == bindparam("cid"))

# Suspending an app ends every grant of it (its codes, access and refresh tokens); the users'
# sessions and their grants with other apps go on.
REVOKE_CLIENT_GRANTS = (
    update(grants)
    .where(grants.c.client_id == bindparam("cid"), grants.c.revoked_at.is_(None))
    .values(revoked_at=_NOW, code_used_at=_NOW)
)
END_CLIENT_REFRESH_TOKENS = (
    update(refresh_tokens)
    .where(
        refresh_tokens.c.grant_id.in_(select(grants.c.id).where(grants.c.client_id == bindparam("cid"))),
        refresh_tokens.c.used_at.is_(None),
    )
    .values(used_at=_NOW)
)

_DUE = and_(_n.failed_at.is_(None), _n.next_at <= _NOW)
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
    .returning(_n.id, _n.client_id, _n.user_id, _n.sid, _n.created_at, _n.attempts, _n.claim)
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


class LogoutStore:
    """The logout-notice half of the store (needs the Store's `db` and `sql`)."""

    async def _enqueue_logout_notices(self, tx: Queries, statement: str, values: dict, now: int) -> int:
        return await tx.execute(getattr(self.sql, statement), {**values, "now": now})

    async def suspend_client(self, event: ClientEvent) -> bool:
        """Suspend the active app of `event` and, in the same transaction, queue a logout notice
        for each session that received its tokens and revoke all of them (codes, access and
        refresh tokens). False when the app was no longer in event.from_state."""
        s, cid, now = self.sql, event.client_id, event.at
        async with self.db.transaction() as tx:
            values = {"cid": cid, "from_state": event.from_state, "to_state": event.to_state, "at": now}
            if not await tx.execute(s.MOVE_CLIENT, values):  # conditional on event.from_state
                return False
            await tx.execute(s.INSERT_CLIENT_EVENT, vars(event))
            await tx.execute(s.ENQUEUE_CLIENT_LOGOUT_NOTICES, {"cid": cid, "now": now})
            await tx.execute(s.REVOKE_CLIENT_GRANTS, {"cid": cid, "now": now})
            await tx.execute(s.END_CLIENT_REFRESH_TOKENS, {"cid": cid, "now": now})
        return True

    async def logout_notice_due(self, now: int) -> bool:
        return await self.db.fetch_one(self.sql.LOGOUT_NOTICE_DUE, {"now": now}) is not None

    async def claim_logout_notices(self, claim: str, now: int, lease_until: int, batch: int = 50) -> list[LogoutNotice]:
        """Take at most `batch` due notices for this caller (`claim`, a fresh random value),
        counting the attempt and hiding them from other workers until `lease_until`."""
        values = {"claimer": claim, "now": now, "lease_until": lease_until, "batch": batch}
        rows = await self.db.fetch_all(self.sql.CLAIM_LOGOUT_NOTICES, values)
        return sorted((LogoutNotice(*row) for row in rows), key=lambda n: n.id)

    async def logout_notice_delivered(self, notice: LogoutNotice) -> bool:
        return bool(await self.db.execute(self.sql.LOGOUT_NOTICE_DELIVERED, {"id": notice.id, "claimer": notice.claim}))

    async def logout_notice_retry(self, notice: LogoutNotice, next_at: int) -> bool:
        values = {"id": notice.id, "claimer": notice.claim, "retry_at": next_at}
        return bool(await self.db.execute(self.sql.LOGOUT_NOTICE_RETRY, values))

    async def logout_notice_failed(self, notice: LogoutNotice, now: int) -> bool:
        values = {"id": notice.id, "claimer": notice.claim, "now": now}
        return bool(await self.db.execute(self.sql.LOGOUT_NOTICE_FAILED, values))

    async def pending_logout_notices(self, limit: int = 100) -> list[tuple]:
        """(id, client_id, user_id, sid, created_at, attempts, next_at) of notices still to send."""
        return [tuple(r) for r in await self.db.fetch_all(self.sql.PENDING_LOGOUT_NOTICES, {"limit": limit})]

    async def failed_logout_notices(self, limit: int = 100) -> list[tuple]:
        """(id, client_id, user_id, sid, created_at, attempts, failed_at) of notices given up on."""
        return [tuple(r) for r in await self.db.fetch_all(self.sql.FAILED_LOGOUT_NOTICES, {"limit": limit})]
