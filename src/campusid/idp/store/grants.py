"""The grants repository: consents, the authorization request's read, codes and the grants they
bind, refresh tokens, the token subject, revocation, and the account page's connected apps.

The single-use rules are single conditional statements, so exactly one of any number of
concurrent callers wins, on any number of workers: `consume_code` (a code is used once) and
`rotate_refresh` (a refresh token is used once). Whatever ends a session, an account or an app
revokes its grants here (`revoke_of_session`, `revoke_of_user`, `revoke_of_client`), inside the
transaction of whoever ended it.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import BigInteger, and_, bindparam, delete, insert, select, union, update

from campusid.idp.store.database import Database, Queries
from campusid.idp.store.errors import Conflict
from campusid.idp.store.repository import CLIENT_WIDTH, Repository, row_maker, typed
from campusid.idp.store.rows import AuthorizeContext, Client, ConnectedApp, Grant, RefreshToken, SignIn, TokenSubject
from campusid.idp.store.schema import (
    CLIENT_COLUMNS,
    CLIENT_JOIN,
    clients,
    consents,
    grants,
    refresh_tokens,
    sessions,
    users,
)

# -- consents -------------------------------------------------------------------------------
_CONSENT_OF = and_(consents.c.user_id == bindparam("uid"), consents.c.client_id == bindparam("cid"))
CONSENT = select(consents.c.scope).where(_CONSENT_OF)
UPDATE_CONSENT = (
    update(consents)
    .where(_CONSENT_OF)
    .values(scope=typed("new_scope", consents.c.scope), updated_at=typed("at", consents.c.updated_at))
)
INSERT_CONSENT = insert(consents)

# -- authorization: the client with this browser's session and consent, in one statement ----
AUTHORIZE_CONTEXT = (
    select(
        *CLIENT_COLUMNS,
        sessions.c.user_id,
        sessions.c.auth_time,
        sessions.c.sid,
        sessions.c.amr,
        sessions.c.acr,
        consents.c.scope,
    )
    .select_from(
        CLIENT_JOIN.outerjoin(
            sessions, and_(sessions.c.id_hash == bindparam("session"), sessions.c.expires_at > bindparam("now"))
        ).outerjoin(
            consents, and_(consents.c.user_id == sessions.c.user_id, consents.c.client_id == clients.c.client_id)
        )
    )
    .where(clients.c.client_id == bindparam("cid"))
)

# -- codes and grants ------------------------------------------------------------------------
INSERT_GRANT = insert(grants)
# The single-use rule (RFC 6749 4.1.2): of any number of concurrent redemptions, on any number
# of workers, exactly one UPDATE matches. A code of another client is never touched.
CONSUME_CODE = (
    update(grants)
    .where(
        grants.c.code_hash == bindparam("h"),
        grants.c.client_id == bindparam("cid"),
        grants.c.code_used_at.is_(None),
        grants.c.code_expires_at > bindparam("now"),
        grants.c.revoked_at.is_(None),
    )
    .values(code_used_at=bindparam("now"))
    .returning(*grants.c)
)
GRANT_BY_CODE = select(grants).where(grants.c.code_hash == bindparam("h"))
GRANT = select(grants).where(grants.c.id == bindparam("gid"))


def _revoke_grants(which):
    """Revoke the live grants `which` selects: their code, access tokens and refresh family."""
    return (
        update(grants)
        .where(which, grants.c.revoked_at.is_(None))
        .values(revoked_at=bindparam("now"), code_used_at=bindparam("now"))
    )


def _end_refresh_tokens(which):
    """End the unused refresh tokens `which` selects."""
    return update(refresh_tokens).where(which, refresh_tokens.c.used_at.is_(None)).values(used_at=bindparam("now"))


def _of_grants(which):
    return refresh_tokens.c.grant_id.in_(select(grants.c.id).where(which))


# The grants of one session: by its user and its sid, the two columns of ix_grants_user_id_sid
# (there is no index on sid alone), so whoever ends a session says whose it was. Ending a session
# queues its logout notices (store/notices.py) and revokes its grants with this same condition.
grants_of_session = and_(grants.c.user_id == bindparam("uid"), grants.c.sid == bindparam("sid"))
_REVOKED = (grants.c.id, grants.c.client_id, grants.c.sid)  # what the apps holding them are to be told

REVOKE_GRANT = _revoke_grants(grants.c.id == bindparam("gid"))
END_REFRESH_FAMILY = _end_refresh_tokens(refresh_tokens.c.grant_id == bindparam("gid"))
# Every grant of a user at once (the account is disabled): its codes, access and refresh tokens.
REVOKE_USER_GRANTS = _revoke_grants(grants.c.user_id == bindparam("uid")).returning(*_REVOKED)
END_USER_REFRESH_TOKENS = _end_refresh_tokens(_of_grants(grants.c.user_id == bindparam("uid")))
# Every grant issued in one session (it ended): codes, access and refresh tokens.
REVOKE_SESSION_GRANTS = _revoke_grants(grants_of_session).returning(*_REVOKED)
END_SESSION_REFRESH_TOKENS = _end_refresh_tokens(_of_grants(grants_of_session))
# Suspending an app ends every grant of it (its codes, access and refresh tokens); the users'
# sessions and their grants with other apps go on.
_NOW = bindparam("now", type_=BigInteger())
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

# -- refresh tokens --------------------------------------------------------------------------
INSERT_REFRESH = insert(refresh_tokens)
# Rotation: the one caller whose UPDATE matched gets the row (RFC 9700 4.14.2).
USE_REFRESH = (
    update(refresh_tokens)
    .where(
        refresh_tokens.c.token_hash == bindparam("h"),
        refresh_tokens.c.used_at.is_(None),
        refresh_tokens.c.expires_at > bindparam("now"),
    )
    .values(used_at=bindparam("now"))
    .returning(*refresh_tokens.c)
)
REFRESH_TOKEN = select(refresh_tokens).where(refresh_tokens.c.token_hash == bindparam("h"))
# userinfo and the records API: the grant (not revoked) with its user, in one statement.
TOKEN_SUBJECT = (
    select(
        grants.c.id.label("grant_id"),
        grants.c.client_id,
        grants.c.scope,
        users.c.id.label("user_id"),
        users.c.name,
        users.c.given_name,
        users.c.family_name,
        users.c.email,
        users.c.student_number,
    )
    .select_from(grants.join(users, users.c.id == grants.c.user_id))
    .where(grants.c.id == bindparam("gid"), grants.c.revoked_at.is_(None))
)

# -- the account page: apps this user consented to, or that hold a grant for them that still
# stands (grants.user_id leads ix_grants_user_id_sid) ----------------------------------------
_APP_IDS = union(
    select(consents.c.client_id).where(consents.c.user_id == bindparam("uid")),
    select(grants.c.client_id).where(grants.c.user_id == bindparam("uid"), grants.c.revoked_at.is_(None)),
).subquery()
CONNECTED_APPS = (
    select(clients.c.client_id, clients.c.name, consents.c.scope)
    .select_from(
        _APP_IDS.join(clients, clients.c.client_id == _APP_IDS.c.client_id).outerjoin(
            consents, and_(consents.c.client_id == clients.c.client_id, consents.c.user_id == bindparam("uid"))
        )
    )
    .order_by(clients.c.name, clients.c.client_id)
)
_OF_USER_APP = and_(grants.c.user_id == bindparam("uid"), grants.c.client_id == bindparam("cid"))
FORGET_CONSENT = delete(consents).where(_CONSENT_OF)
REVOKE_USER_APP_GRANTS = _revoke_grants(_OF_USER_APP).returning(*_REVOKED)
END_USER_APP_REFRESH_TOKENS = _end_refresh_tokens(_of_grants(_OF_USER_APP))


class Grants(Repository):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._consent = db.prepare("CONSENT", CONSENT)
        self._update_consent = db.prepare("UPDATE_CONSENT", UPDATE_CONSENT)
        self._insert_consent = db.prepare("INSERT_CONSENT", INSERT_CONSENT)
        self._authorize_context = db.prepare("AUTHORIZE_CONTEXT", AUTHORIZE_CONTEXT)
        self._insert = db.prepare("INSERT_GRANT", INSERT_GRANT)
        self._consume_code = db.prepare("CONSUME_CODE", CONSUME_CODE)
        self._by_code = db.prepare("GRANT_BY_CODE", GRANT_BY_CODE)
        self._by_id = db.prepare("GRANT", GRANT)
        self._revoke = db.prepare("REVOKE_GRANT", REVOKE_GRANT)
        self._end_family = db.prepare("END_REFRESH_FAMILY", END_REFRESH_FAMILY)
        self._revoke_of_user = db.prepare("REVOKE_USER_GRANTS", REVOKE_USER_GRANTS)
        self._end_refresh_of_user = db.prepare("END_USER_REFRESH_TOKENS", END_USER_REFRESH_TOKENS)
        self._revoke_of_session = db.prepare("REVOKE_SESSION_GRANTS", REVOKE_SESSION_GRANTS)
        self._end_refresh_of_session = db.prepare("END_SESSION_REFRESH_TOKENS", END_SESSION_REFRESH_TOKENS)
        self._revoke_of_client = db.prepare("REVOKE_CLIENT_GRANTS", REVOKE_CLIENT_GRANTS)
        self._end_refresh_of_client = db.prepare("END_CLIENT_REFRESH_TOKENS", END_CLIENT_REFRESH_TOKENS)
        self._insert_refresh = db.prepare("INSERT_REFRESH", INSERT_REFRESH)
        self._use_refresh = db.prepare("USE_REFRESH", USE_REFRESH)
        self._refresh_token = db.prepare("REFRESH_TOKEN", REFRESH_TOKEN)
        self._token_subject = db.prepare("TOKEN_SUBJECT", TOKEN_SUBJECT)
        self._connected_apps = db.prepare("CONNECTED_APPS", CONNECTED_APPS)
        self._forget_consent = db.prepare("FORGET_CONSENT", FORGET_CONSENT)
        self._revoke_of_user_app = db.prepare("REVOKE_USER_APP_GRANTS", REVOKE_USER_APP_GRANTS)
        self._end_refresh_of_user_app = db.prepare("END_USER_APP_REFRESH_TOKENS", END_USER_APP_REFRESH_TOKENS)

        self._grant = row_maker(Grant, self._by_id)
        self._consumed = row_maker(Grant, self._consume_code)
        self._refresh = row_maker(RefreshToken, self._refresh_token)
        self._used_refresh = row_maker(RefreshToken, self._use_refresh)
        self._subject = row_maker(TokenSubject, self._token_subject)
        ctx_client = row_maker(Client, self._authorize_context)
        ctx_sign_in = row_maker(SignIn, self._authorize_context, start=CLIENT_WIDTH)
        self._context = lambda r: AuthorizeContext(
            ctx_client(r), ctx_sign_in(r) if r[CLIENT_WIDTH] is not None else None, r[-1]
        )

    # -- consent -----------------------------------------------------------------------------
    async def consented_scopes(self, user_id: str, client_id: str) -> set[str]:
        row = await self.db.fetch_one(self._consent, {"uid": user_id, "cid": client_id})
        return set(row[0].split()) if row is not None else set()

    async def remember_consent(self, user_id: str, client_id: str, scopes: Iterable[str], now: int) -> None:
        """Add `scopes` to what the user has consented to for the client.

        Two first consents of one user to one client may race (two tabs, two workers): both read
        no row and both insert, and the database refuses the second insert (Conflict). That one
        is run again: it now reads the row the first wrote, and adds its scopes to them."""
        key = {"uid": user_id, "cid": client_id}
        wanted = set(scopes)
        for attempt in (1, 2):
            try:
                async with self.db.transaction() as tx:
                    row = await tx.fetch_one(self._consent, key)
                    scope = " ".join(sorted(wanted | (set(row[0].split()) if row is not None else set())))
                    if row is not None:
                        await tx.execute(self._update_consent, {**key, "new_scope": scope, "at": now})
                    else:
                        values = {"user_id": user_id, "client_id": client_id, "scope": scope, "updated_at": now}
                        await tx.execute(self._insert_consent, values)
                return
            except Conflict:
                if attempt == 2:
                    raise

    # -- authorization and codes -------------------------------------------------------------
    async def authorize_context(self, client_id: str, session_hash: str | None, now: int) -> AuthorizeContext | None:
        """The client (None if unknown) with this browser's live session and consent, in one statement."""
        values = {"cid": client_id, "session": session_hash, "now": now}
        return await self._row(self._authorize_context, self._context, values)

    async def create(self, grant: Grant) -> None:
        await self.db.execute(self._insert, vars(grant))

    async def insert(self, tx: Queries, grant: Grant) -> None:
        """`create`, as a step of the caller's transaction (a login's writes, a device code redeemed)."""
        await tx.execute(self._insert, vars(grant))

    async def consume_code(self, code_hash: str, client_id: str, now: int) -> Grant | None:
        """Mark the code used and return its grant, if it is `client_id`'s, unused, unexpired and
        not revoked; exactly one of any number of concurrent callers gets it."""
        values = {"h": code_hash, "cid": client_id, "now": now}
        return await self._row(self._consume_code, self._consumed, values)

    async def by_code(self, code_hash: str) -> Grant | None:
        return await self._row(self._by_code, self._grant, {"h": code_hash})

    async def get(self, grant_id: str) -> Grant | None:
        return await self._row(self._by_id, self._grant, {"gid": grant_id})

    # -- revocation --------------------------------------------------------------------------
    async def revoke(self, grant_id: str, now: int) -> None:
        """End the grant: its code, its access tokens (checked against it) and its refresh tokens."""
        async with self.db.transaction() as tx:
            await tx.execute(self._revoke, {"gid": grant_id, "now": now})
            await tx.execute(self._end_family, {"gid": grant_id, "now": now})

    async def revoke_of_session(self, tx: Queries, user_id: str, sid: str, now: int) -> list[tuple]:
        """In the caller's transaction: revoke every grant issued in the session `sid` of
        `user_id` and end their refresh tokens; (id, client_id, sid) of each grant revoked."""
        values = {"uid": user_id, "sid": sid, "now": now}
        revoked = [tuple(g) for g in await tx.fetch_all(self._revoke_of_session, values)]
        await tx.execute(self._end_refresh_of_session, values)
        return revoked

    async def revoke_of_user(self, tx: Queries, user_id: str, now: int) -> list[tuple]:
        """In the caller's transaction: the same for every grant of the user."""
        values = {"uid": user_id, "now": now}
        revoked = [tuple(g) for g in await tx.fetch_all(self._revoke_of_user, values)]
        await tx.execute(self._end_refresh_of_user, values)
        return revoked

    async def revoke_of_client(self, tx: Queries, client_id: str, now: int) -> None:
        """In the caller's transaction: the same for every grant of the app."""
        values = {"cid": client_id, "now": now}
        await tx.execute(self._revoke_of_client, values)
        await tx.execute(self._end_refresh_of_client, values)

    # -- refresh tokens and the token subject ------------------------------------------------
    async def add_refresh_token(self, token: RefreshToken) -> None:
        await self.db.execute(self._insert_refresh, vars(token))

    async def rotate_refresh(
        self, token_hash: str, now: int, successor_hash: str, successor_expires_at: int
    ) -> Grant | None:
        """Mark the refresh token used, once, and store its successor in the same transaction;
        the grant it continues, or None when the token is unknown, expired or already used
        (`refresh_token` tells which). Together, so that a failure between the two (the database
        restarting) never leaves the client's token used with no successor stored: the client
        would present it again, a reuse that revokes the whole family (RFC 9700 4.14.2)."""
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(self._use_refresh, {"h": token_hash, "now": now})
            if row is None:
                return None
            used = self._used_refresh(row)
            successor = RefreshToken(successor_hash, used.grant_id, now, successor_expires_at, None)
            await tx.execute(self._insert_refresh, vars(successor))
        return await self.get(used.grant_id)

    async def refresh_token(self, token_hash: str) -> RefreshToken | None:
        return await self._row(self._refresh_token, self._refresh, {"h": token_hash})

    async def token_subject(self, grant_id: str) -> TokenSubject | None:
        """The grant, if not revoked, with its user's claims (userinfo, records): one statement."""
        return await self._row(self._token_subject, self._subject, {"gid": grant_id})

    # -- the account page --------------------------------------------------------------------
    async def connected_apps(self, user_id: str) -> list[ConnectedApp]:
        return [ConnectedApp(*r) for r in await self.db.fetch_all(self._connected_apps, {"uid": user_id})]

    async def remove_connected_app(self, user_id: str, client_id: str, now: int) -> int:
        """Forget the user's consent to the app and revoke every grant it holds for them (codes,
        access and refresh tokens), together; how many grants were revoked."""
        key = {"uid": user_id, "cid": client_id, "now": now}
        async with self.db.transaction() as tx:
            await tx.execute(self._forget_consent, {"uid": user_id, "cid": client_id})
            revoked = await tx.fetch_all(self._revoke_of_user_app, key)
            await tx.execute(self._end_refresh_of_user_app, key)
        return len(revoked)
