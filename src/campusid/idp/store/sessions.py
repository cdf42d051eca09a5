"""The sessions repository: browser sessions, pending interactions (a login or consent under
way) and a successful login's writes, with the account page's view of one's own sessions.

A sign-in completes once: `finish_interaction` is one conditional DELETE … RETURNING, and
`complete_login` writes the session and the code's grant only for the caller whose DELETE
matched, all or nothing. How it does that is the database's (sqlite.py: one transaction;
postgres.py: one statement), hence a subclass per database.

Ending a session revokes every grant issued in it and queues the apps' back-channel logout
notices, in one transaction, through the grants and notices repositories.
"""

from __future__ import annotations

import time
from dataclasses import fields

from sqlalchemy import and_, bindparam, delete, exists, insert, select, update

from campusid.idp.store.database import Database, Prepared, Queries
from campusid.idp.store.grants import Grants
from campusid.idp.store.notices import Notices
from campusid.idp.store.repository import Repository, row_maker, typed
from campusid.idp.store.rows import Client, Ended, Grant, Interaction, LoginContext, Session
from campusid.idp.store.schema import (
    CLIENT_COLUMNS,
    CLIENT_JOIN,
    clients,
    consents,
    factors,
    interactions,
    sessions,
    users,
)

_s = sessions.c
SESSION = select(sessions).where(_s.id_hash == bindparam("h"), _s.expires_at > bindparam("now"))
INSERT_SESSION = insert(sessions)
DELETE_SESSION = delete(sessions).where(_s.id_hash == bindparam("h"))
# Ending one session: by the browser's cookie (logout) or by its sid for its own user (the account
# page); either returns who it was, for the grants issued in it to be revoked with it.
END_SESSION = delete(sessions).where(_s.id_hash == bindparam("h")).returning(_s.sid, _s.user_id)
END_SESSION_BY_SID = (
    delete(sessions).where(_s.sid == bindparam("sid"), _s.user_id == bindparam("uid")).returning(_s.sid, _s.user_id)
)
# A user's sessions (disabling the account ends them all), with their sids for the apps to tell.
END_USER_SESSIONS = delete(sessions).where(_s.user_id == bindparam("uid")).returning(_s.sid)
# The account page: one's own live sessions, the one in use marked seen, the others ended.
USER_SESSIONS = (
    select(sessions)
    .where(_s.user_id == bindparam("uid"), _s.expires_at > bindparam("now"))
    .order_by(_s.created_at.desc())
)
SEEN_SESSION = update(sessions).where(_s.id_hash == bindparam("h")).values(last_seen_at=bindparam("now"))
END_OTHER_SESSIONS = (
    delete(sessions).where(_s.user_id == bindparam("uid"), _s.id_hash != bindparam("keep")).returning(_s.sid)
)

INTERACTION = select(interactions).where(
    interactions.c.id_hash == bindparam("h"), interactions.c.expires_at > bindparam("now")
)
INSERT_INTERACTION = insert(interactions)
FINISH_INTERACTION = (
    delete(interactions).where(interactions.c.id_hash == bindparam("h")).returning(interactions.c.id_hash)
)
# A pending sign-in's parameters changed in place (its language), while it is live.
SET_INTERACTION_PARAMS = (
    update(interactions)
    .where(interactions.c.id_hash == bindparam("h"), interactions.c.expires_at > bindparam("now"))
    .values(params=typed("params", interactions.c.params))
    .returning(interactions.c.id_hash)
)
# The login POST: the interaction, the user the form names and, for an authorization request,
# its client with that user's remembered consent, in one statement (with what decides whether
# the sign-in needs a second factor: the user's role and whether they have one).
LOGIN_CONTEXT = (
    select(
        interactions,
        users.c.id,
        users.c.password_hash,
        users.c.disabled_at,
        users.c.source,
        users.c.role,
        # whether the user has a second factor (factors.user_id is indexed)
        exists().where(factors.c.user_id == users.c.id, factors.c.confirmed_at.is_not(None)),
        *CLIENT_COLUMNS,
        consents.c.scope,
    )
    .select_from(
        interactions.outerjoin(users, users.c.username == bindparam("name"))
        .outerjoin(CLIENT_JOIN, clients.c.client_id == interactions.c.params["client_id"].as_string())
        .outerjoin(consents, and_(consents.c.user_id == users.c.id, consents.c.client_id == clients.c.client_id))
    )
    .where(interactions.c.id_hash == bindparam("h"), interactions.c.expires_at > bindparam("now"))
)


class Sessions(Repository):
    """Each database's subclass (sqlite.py, postgres.py) supplies `complete_login`."""

    def __init__(self, db: Database, grants: Grants, notices: Notices) -> None:
        super().__init__(db)
        self._grants, self._notices = grants, notices
        self._by_hash = db.prepare("SESSION", SESSION)
        self._insert = db.prepare("INSERT_SESSION", INSERT_SESSION)
        self._delete = db.prepare("DELETE_SESSION", DELETE_SESSION)
        self._end = db.prepare("END_SESSION", END_SESSION)
        self._end_by_sid = db.prepare("END_SESSION_BY_SID", END_SESSION_BY_SID)
        self._end_of_user = db.prepare("END_USER_SESSIONS", END_USER_SESSIONS)
        self._of_user = db.prepare("USER_SESSIONS", USER_SESSIONS)
        self._seen = db.prepare("SEEN_SESSION", SEEN_SESSION)
        self._end_others = db.prepare("END_OTHER_SESSIONS", END_OTHER_SESSIONS)
        self._interaction_by_hash = db.prepare("INTERACTION", INTERACTION)
        self._insert_interaction = db.prepare("INSERT_INTERACTION", INSERT_INTERACTION)
        self._finish_interaction = db.prepare("FINISH_INTERACTION", FINISH_INTERACTION)
        self._set_interaction_params = db.prepare("SET_INTERACTION_PARAMS", SET_INTERACTION_PARAMS)
        self._login_context = db.prepare("LOGIN_CONTEXT", LOGIN_CONTEXT)

        self._session = row_maker(Session, self._by_hash)
        self._user_session = row_maker(Session, self._of_user)
        self._interaction = row_maker(Interaction, self._interaction_by_hash)
        # LOGIN_CONTEXT's columns: the interaction's, the user's id, password hash, disabled_at,
        # source, role and whether they have a second factor, the client's, the consent's scope.
        user_at = len(fields(Interaction))
        client_at = user_at + 6
        login_interaction = row_maker(Interaction, self._login_context)
        login_client = row_maker(Client, self._login_context, start=client_at)
        self._login = lambda r: LoginContext(
            login_interaction(r), *r[user_at:client_at], login_client(r) if r[client_at] is not None else None, r[-1]
        )

    # -- browser sessions --------------------------------------------------------------------
    async def get(self, id_hash: str, now: int) -> Session | None:
        """The session if it is still live."""
        return await self._row(self._by_hash, self._session, {"h": id_hash, "now": now})

    async def start(self, session: Session, replaces: str | None = None) -> None:
        """Start `session`, ending the browser's previous one (`replaces`, its id hash) with it."""
        if replaces is None:
            await self.db.execute(self._insert, vars(session))
            return
        async with self.db.transaction() as tx:
            await tx.execute(self._delete, {"h": replaces})
            await tx.execute(self._insert, vars(session))

    async def end(self, id_hash: str, now: int) -> Ended | None:
        """End the browser's session (by its cookie's hash) and revoke every grant issued in it,
        in one transaction that also queues the apps' back-channel logout notices; None when
        there was no such session (ended already)."""
        return await self._end_one(self._end, {"h": id_hash}, now)

    async def end_by_sid(self, sid: str, user_id: str, now: int) -> Ended | None:
        """The same for the session `sid` of `user_id` (another session of one's own account)."""
        return await self._end_one(self._end_by_sid, {"sid": sid, "uid": user_id}, now)

    async def _end_one(self, q: Prepared, key: dict, now: int) -> Ended | None:
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(q, key)
            if row is None:
                return None
            sid, user_id = row[0], row[1]
            grants = await self._ended(tx, user_id, sid, now)
        return Ended(user_id, (sid,), tuple(grants))

    async def _ended(self, tx: Queries, user_id: str, sid: str, now: int) -> list[tuple]:
        """What follows a session's end in its transaction: the notices first (they read the
        grants still standing), then the grants revoked; those grants."""
        await self._notices.enqueue_for_session(tx, user_id, sid, now)
        return await self._grants.revoke_of_session(tx, user_id, sid, now)

    async def end_all_of_user(self, tx: Queries, user_id: str) -> list[str]:
        """In the caller's transaction (the account is disabled): delete every session of the
        user; their sids. Their grants are the caller's to revoke, all at once."""
        return [row[0] for row in await tx.fetch_all(self._end_of_user, {"uid": user_id})]

    # -- the account page --------------------------------------------------------------------
    async def of_user(self, user_id: str, now: int) -> list[Session]:
        """The user's live sessions, newest first."""
        return await self._rows(self._of_user, self._user_session, {"uid": user_id, "now": now})

    async def seen(self, id_hash: str, now: int) -> None:
        await self.db.execute(self._seen, {"h": id_hash, "now": now})

    async def end_others(self, user_id: str, keep_hash: str, now: int) -> list[str]:
        """End every session of the user but `keep_hash`, each with the grants issued in it; the
        sids that ended."""
        async with self.db.transaction() as tx:
            sids = [r[0] for r in await tx.fetch_all(self._end_others, {"uid": user_id, "keep": keep_hash})]
            for sid in sids:  # each app told, as for any session that ends
                await self._ended(tx, user_id, sid, now)
        return sids

    # -- pending interactions and the login ----------------------------------------------------
    async def interaction(self, id_hash: str, now: int) -> Interaction | None:
        return await self._row(self._interaction_by_hash, self._interaction, {"h": id_hash, "now": now})

    async def login_context(self, id_hash: str, now: int, username: str) -> LoginContext | None:
        """The live interaction with what its login needs, in one statement (None when the
        interaction is gone): see LoginContext."""
        values = {"h": id_hash, "now": now, "name": username}
        return await self._row(self._login_context, self._login, values)

    async def create_interaction(self, interaction: Interaction) -> None:
        await self.db.execute(self._insert_interaction, vars(interaction))

    async def set_interaction_params(self, id_hash: str, params: dict, now: int | None = None) -> bool:
        """Replace a live interaction's parameters; False when it is gone."""
        values = {"h": id_hash, "now": int(time.time()) if now is None else now, "params": params}
        return await self.db.fetch_one(self._set_interaction_params, values) is not None

    async def finish_interaction(self, id_hash: str) -> bool:
        """Delete the interaction; True for the one caller that finished it."""
        return await self.db.fetch_one(self._finish_interaction, {"h": id_hash}) is not None

    async def complete_login(
        self,
        interaction_hash: str,
        session: Session,
        replaces: str | None = None,
        *,
        grant: Grant | None = None,
        next_interaction: Interaction | None = None,
    ) -> bool:
        """Finish the interaction and, only if this call finished it (True), replace the browser's
        session (`replaces`) by `session` and write the code's `grant` or the consent step's
        `next_interaction`: all or nothing. Each database's subclass does it its own way."""
        raise NotImplementedError
