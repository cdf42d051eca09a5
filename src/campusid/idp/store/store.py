"""The store: one async interface with the domain's methods, over one database.

Everything the IdP, the CLI and the review workflow read or write goes through these methods;
none of them builds SQL (statements.py does, once). The rules that decide security outcomes are
single conditional statements, so exactly one of any number of concurrent callers wins, on any
number of workers: `consume_code` (a code is used once), `rotate_refresh` (a refresh token is
used once), `finish_interaction` / `complete_login` (a sign-in completes once) and the changes
of an app's review state (each conditional on the state it was read in).

Two implementations share all of this and differ only where the databases do (sqlite.py,
postgres.py): how statements reach the database, and a successful login's writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from functools import lru_cache
from types import MappingProxyType, SimpleNamespace
from typing import Any, TypeVar

from campusid.idp.store.database import Database, Prepared
from campusid.idp.store.devices import DeviceStore
from campusid.idp.store.directory import DirectoryStore
from campusid.idp.store.errors import Conflict, StoreError
from campusid.idp.store.events import EventStore
from campusid.idp.store.factors import FactorStore
from campusid.idp.store.housekeeping import HousekeepingStore
from campusid.idp.store.logout import LogoutStore
from campusid.idp.store.rows import (
    AuthorizeContext,
    Client,
    ClientConfig,
    ClientEvent,
    Grant,
    Interaction,
    LoginContext,
    RefreshToken,
    Session,
    SignIn,
    SigningKey,
    TokenSubject,
    User,
)
from campusid.idp.store.statements import all_statements

R = TypeVar("R")


@dataclass(frozen=True)
class Ended:
    """What ended with a session or an account: the user, the sessions' sids and the grants
    revoked with them (id, client_id, sid) — what the apps holding them are to be told."""

    user_id: str
    sids: tuple[str, ...]
    grants: tuple[tuple[str, str, str | None], ...]


_CLIENT_WIDTH = len(fields(Client))
_REQUIRE_MFA_AT = [f.name for f in fields(Client)].index("require_mfa")


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    return value


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
)
_CLIENT_JSON_AT = tuple(i for i, f in enumerate(fields(Client)) if f.name in _CLIENT_JSON)


@lru_cache(maxsize=1024)
def _client(raw: tuple) -> Client:
    """A client row, decoded once per distinct row: every request of an app reads the same row,
    and its five JSON columns cost more to decode than the statement costs to run. Immutable, so
    one object serves every request (an edit is a new row, hence a new entry)."""
    values = list(raw)
    for i in _CLIENT_JSON_AT:
        values[i] = _frozen(_json(values[i]))
    values[_REQUIRE_MFA_AT] = bool(values[_REQUIRE_MFA_AT])  # SQLite hands a Boolean back as 0 or 1
    return Client(*values)


def _row_maker(cls: type[R], q: Prepared, start: int = 0) -> Callable[[Sequence], R]:
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


class Store(EventStore, DeviceStore, HousekeepingStore, DirectoryStore, FactorStore, LogoutStore):
    def __init__(self, db: Database) -> None:
        self.db = db
        self.sql = SimpleNamespace(**{name: db.prepare(name, stmt) for name, stmt in all_statements().items()})
        s = self.sql
        self._prepare_events()
        self._prepare_devices()
        self._prepare_factors()
        self._user = _row_maker(User, s.USER_BY_ID)
        self._client = _row_maker(Client, s.CLIENT)
        self._event = _row_maker(ClientEvent, s.CLIENT_EVENTS)
        self._key = _row_maker(SigningKey, s.KEYS)
        self._session = _row_maker(Session, s.SESSION)
        self._interaction = _row_maker(Interaction, s.INTERACTION)
        self._grant = _row_maker(Grant, s.GRANT)
        self._consumed = _row_maker(Grant, s.CONSUME_CODE)
        self._refresh = _row_maker(RefreshToken, s.REFRESH_TOKEN)
        self._used_refresh = _row_maker(RefreshToken, s.USE_REFRESH)
        self._subject = _row_maker(TokenSubject, s.TOKEN_SUBJECT)
        ctx_client = _row_maker(Client, s.AUTHORIZE_CONTEXT)
        ctx_sign_in = _row_maker(SignIn, s.AUTHORIZE_CONTEXT, start=_CLIENT_WIDTH)
        self._authorize_context = lambda r: AuthorizeContext(
            ctx_client(r), ctx_sign_in(r) if r[_CLIENT_WIDTH] is not None else None, r[-1]
        )
        # LOGIN_CONTEXT's columns: the interaction's, the user's id, password hash, disabled_at,
        # source, role and whether they have a second factor, the client's, the consent's scope.
        user_at = len(fields(Interaction))
        client_at = user_at + 6
        login_interaction = _row_maker(Interaction, s.LOGIN_CONTEXT)
        login_client = _row_maker(Client, s.LOGIN_CONTEXT, start=client_at)
        self._login_context = lambda r: LoginContext(
            login_interaction(r), *r[user_at:client_at], login_client(r) if r[client_at] is not None else None, r[-1]
        )

    def prepared(self) -> dict[str, Prepared]:
        """Every statement this store runs, compiled for its database."""
        return {**vars(self.sql), **{q.name: q for q in self._event_pages.values()}}

    # -- lifetime ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the running event loop's connections (PostgreSQL); statements work without, slower."""
        await self.db.start()

    async def stop(self) -> None:
        await self.db.stop()

    async def ping(self) -> None:
        """One round trip to the database; StoreUnavailable when it cannot be reached."""
        await self.db.fetch_one(self.sql.PING)

    async def __aenter__(self) -> Store:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def close(self) -> None:
        self.db.close()

    async def _rows(self, q: Prepared, make: Callable[[Sequence], R], values: dict | None = None) -> list[R]:
        return [make(r) for r in await self.db.fetch_all(q, values or {})]

    async def _row(self, q: Prepared, make: Callable[[Sequence], R], values: dict) -> R | None:
        row = await self.db.fetch_one(q, values)
        return make(row) if row is not None else None

    # -- users -------------------------------------------------------------------------------
    async def add_user(self, user: User) -> User:
        """Raises Conflict when the username or student number is taken."""
        await self.db.execute(self.sql.INSERT_USER, vars(user))
        return user

    async def user(self, user_id: str) -> User | None:
        return await self._row(self.sql.USER_BY_ID, self._user, {"uid": user_id})

    async def user_by_username(self, username: str) -> User | None:
        return await self._row(self.sql.USER_BY_NAME, self._user, {"name": username})

    async def users(self) -> list[User]:
        return await self._rows(self.sql.USERS, self._user)

    async def set_password_hash(self, user_id: str, password_hash: str) -> bool:
        """False when the account is not a local one (a directory account has no password here)."""
        return bool(await self.db.execute(self.sql.SET_PASSWORD_HASH, {"uid": user_id, "hash": password_hash}))

    async def set_role(self, user_id: str, role: str) -> None:
        await self.db.execute(self.sql.SET_ROLE, {"uid": user_id, "new_role": role})

    async def disable_user(self, user_id: str, now: int) -> Ended | None:
        """Disable the account and, in the same transaction, end every session of it and revoke
        every grant (its codes, access and refresh tokens). None when it was disabled already."""
        s, uid = self.sql, {"uid": user_id}
        async with self.db.transaction() as tx:
            if not await tx.execute(s.DISABLE_USER, {**uid, "at": now}):
                return None
            sids = [row[0] for row in await tx.fetch_all(s.END_USER_SESSIONS, uid)]
            await self._enqueue_logout_notices(tx, "ENQUEUE_USER_LOGOUT_NOTICES", uid, now)
            grants = [tuple(row) for row in await tx.fetch_all(s.REVOKE_USER_GRANTS, {**uid, "now": now})]
            await tx.execute(s.END_USER_REFRESH_TOKENS, {**uid, "now": now})
        return Ended(user_id, tuple(sids), tuple(grants))

    async def enable_user(self, user_id: str) -> bool:
        """Let a disabled account sign in again; False when it was not disabled."""
        return bool(await self.db.execute(self.sql.ENABLE_USER, {"uid": user_id}))

    # -- clients and their review ------------------------------------------------------------
    async def client(self, client_id: str) -> Client | None:
        return await self._row(self.sql.CLIENT, self._client, {"cid": client_id})

    async def clients(self, *, owner_id: str | None = None, state: str | None = None) -> list[Client]:
        """Oldest change first; all, or those of one owner, or those in one state."""
        if owner_id is not None:
            found = await self._rows(self.sql.CLIENTS_OF_OWNER, self._client, {"owner": owner_id})
            return [c for c in found if state is None or c.state == state]
        if state is not None:
            return await self._rows(self.sql.CLIENTS_IN_STATE, self._client, {"in_state": state})
        return await self._rows(self.sql.CLIENTS, self._client)

    async def clients_with_revision(self, revision_state: str) -> list[Client]:
        return await self._rows(self.sql.CLIENTS_WITH_REVISION, self._client, {"in_revision_state": revision_state})

    async def create_client(self, client: Client, event: ClientEvent) -> None:
        """Raises Conflict when the client_id is taken."""
        async with self.db.transaction() as tx:
            await tx.execute(self.sql.INSERT_CLIENT, vars(client))
            await tx.execute(self.sql.INSERT_CLIENT_EVENT, vars(event))

    async def _change_client(self, q: Prepared, values: dict, event: ClientEvent) -> bool:
        """Apply one conditional change and, only if it matched, log `event` (its time is the
        app's new updated_at). False when the app was no longer as its caller read it."""
        async with self.db.transaction() as tx:
            if not await tx.execute(q, {**values, "cid": event.client_id, "at": event.at}):
                return False
            await tx.execute(self.sql.INSERT_CLIENT_EVENT, vars(event))
        return True

    async def move_client(
        self,
        event: ClientEvent,
        *,
        granted_scopes: Sequence[str] | None = None,
        granted_grant_types: Sequence[str] = (),
        require_mfa: bool = False,
    ) -> bool:
        """Move the app of `event` from event.from_state to event.to_state (an approval also sets
        the granted scopes and grant types, and whether its sign-ins need a second factor)."""
        values = {"from_state": event.from_state, "to_state": event.to_state}
        if granted_scopes is None:
            return await self._change_client(self.sql.MOVE_CLIENT, values, event)
        values.update(
            granted=list(granted_scopes), granted_grant_types=list(granted_grant_types), require_mfa=require_mfa
        )
        return await self._change_client(self.sql.APPROVE_CLIENT, values, event)

    async def edit_client(self, config: ClientConfig, event: ClientEvent) -> bool:
        """Replace the configuration of the app of `event`, while it is in event.from_state."""
        values = {"from_state": event.from_state, **_config_values(config)}
        return await self._change_client(self.sql.EDIT_CLIENT, values, event)

    async def set_client_secret(self, secret_hash: str, event: ClientEvent) -> bool:
        values = {"from_state": event.from_state, "new_secret_hash": secret_hash}
        return await self._change_client(self.sql.SET_CLIENT_SECRET, values, event)

    async def set_revision(
        self, from_revision_state: str | None, revision: dict | None, revision_state: str | None, event: ClientEvent
    ) -> bool:
        """File or judge a revision of an active app, while its revision is in `from_revision_state`."""
        values = {
            "from_revision_state": from_revision_state,
            "new_revision": revision,
            "new_revision_state": revision_state,
        }
        return await self._change_client(self.sql.SET_REVISION, values, event)

    async def apply_revision(
        self,
        from_revision_state: str,
        config: ClientConfig,
        granted_scopes: Sequence[str],
        event: ClientEvent,
        granted_grant_types: Sequence[str] = (),
    ) -> bool:
        """Replace an active app's configuration with its approved revision."""
        values = {
            "from_revision_state": from_revision_state,
            "granted": list(granted_scopes),
            "granted_grant_types": list(granted_grant_types),
            **_config_values(config),
        }
        return await self._change_client(self.sql.APPLY_REVISION, values, event)

    async def client_events(self, client_id: str) -> list[ClientEvent]:
        return await self._rows(self.sql.CLIENT_EVENTS, self._event, {"cid": client_id})

    async def recent_client_events(self, limit: int) -> list[ClientEvent]:
        return await self._rows(self.sql.RECENT_CLIENT_EVENTS, self._event, {"limit": limit})

    # -- signing keys ------------------------------------------------------------------------
    async def add_key(self, key: SigningKey) -> None:
        await self.db.execute(self.sql.INSERT_KEY, vars(key))

    async def keys(self) -> list[SigningKey]:
        return await self._rows(self.sql.KEYS, self._key)

    async def delete_keys(self, kids: Iterable[str]) -> None:
        kids = list(kids)
        if kids:
            async with self.db.transaction() as tx:
                await tx.execute_many(self.sql.DELETE_KEY, [{"kid": kid} for kid in kids])

    # -- browser sessions --------------------------------------------------------------------
    async def session(self, id_hash: str, now: int) -> Session | None:
        """The session if it is still live."""
        return await self._row(self.sql.SESSION, self._session, {"h": id_hash, "now": now})

    async def start_session(self, session: Session, replaces: str | None = None) -> None:
        """Start `session`, ending the browser's previous one (`replaces`, its id hash) with it."""
        if replaces is None:
            await self.db.execute(self.sql.INSERT_SESSION, vars(session))
            return
        async with self.db.transaction() as tx:
            await tx.execute(self.sql.DELETE_SESSION, {"h": replaces})
            await tx.execute(self.sql.INSERT_SESSION, vars(session))

    async def end_session(self, id_hash: str, now: int) -> Ended | None:
        """End the browser's session (by its cookie's hash) and revoke every grant issued in it,
        in one transaction that also queues the apps' back-channel logout notices (store/logout.py);
        None when there was no such session (ended already)."""
        return await self._end_session(self.sql.END_SESSION, {"h": id_hash}, now)

    async def end_session_by_sid(self, sid: str, user_id: str, now: int) -> Ended | None:
        """The same for the session `sid` of `user_id` (another session of one's own account)."""
        return await self._end_session(self.sql.END_SESSION_BY_SID, {"sid": sid, "uid": user_id}, now)

    async def _end_session(self, q: Prepared, key: dict, now: int) -> Ended | None:
        s = self.sql
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(q, key)
            if row is None:
                return None
            sid, user_id = row[0], row[1]
            session = {"uid": user_id, "sid": sid}
            await self._enqueue_logout_notices(tx, "ENQUEUE_SESSION_LOGOUT_NOTICES", session, now)
            grants = [tuple(g) for g in await tx.fetch_all(s.REVOKE_SESSION_GRANTS, {**session, "now": now})]
            await tx.execute(s.END_SESSION_REFRESH_TOKENS, {**session, "now": now})
        return Ended(user_id, (sid,), tuple(grants))

    # -- pending interactions and the login ----------------------------------------------------
    async def interaction(self, id_hash: str, now: int) -> Interaction | None:
        return await self._row(self.sql.INTERACTION, self._interaction, {"h": id_hash, "now": now})

    async def login_context(self, id_hash: str, now: int, username: str) -> LoginContext | None:
        """The live interaction with what its login needs, in one statement (None when the
        interaction is gone): see LoginContext."""
        values = {"h": id_hash, "now": now, "name": username}
        return await self._row(self.sql.LOGIN_CONTEXT, self._login_context, values)

    async def create_interaction(self, interaction: Interaction) -> None:
        await self.db.execute(self.sql.INSERT_INTERACTION, vars(interaction))

    async def finish_interaction(self, id_hash: str) -> bool:
        """Delete the interaction; True for the one caller that finished it."""
        return await self.db.fetch_one(self.sql.FINISH_INTERACTION, {"h": id_hash}) is not None

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
        `next_interaction`: all or nothing."""
        return await self._write_login(interaction_hash, session, replaces, grant, next_interaction)

    async def _write_login(
        self, id_hash: str, session: Session, replaces: str | None, grant: Grant | None, next_: Interaction | None
    ) -> bool:
        """:meth:`complete_login` in this database's statements: one per database."""
        raise NotImplementedError

    # -- consent -----------------------------------------------------------------------------
    async def consented_scopes(self, user_id: str, client_id: str) -> set[str]:
        row = await self.db.fetch_one(self.sql.CONSENT, {"uid": user_id, "cid": client_id})
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
                    row = await tx.fetch_one(self.sql.CONSENT, key)
                    scope = " ".join(sorted(wanted | (set(row[0].split()) if row is not None else set())))
                    if row is not None:
                        await tx.execute(self.sql.UPDATE_CONSENT, {**key, "new_scope": scope, "at": now})
                    else:
                        values = {"user_id": user_id, "client_id": client_id, "scope": scope, "updated_at": now}
                        await tx.execute(self.sql.INSERT_CONSENT, values)
                return
            except Conflict:
                if attempt == 2:
                    raise

    # -- authorization, codes and tokens ---------------------------------------------------------
    async def authorize_context(self, client_id: str, session_hash: str | None, now: int) -> AuthorizeContext | None:
        """The client (None if unknown) with this browser's live session and consent, in one statement."""
        values = {"cid": client_id, "session": session_hash, "now": now}
        return await self._row(self.sql.AUTHORIZE_CONTEXT, self._authorize_context, values)

    async def create_grant(self, grant: Grant) -> None:
        await self.db.execute(self.sql.INSERT_GRANT, vars(grant))

    async def consume_code(self, code_hash: str, client_id: str, now: int) -> Grant | None:
        """Mark the code used and return its grant, if it is `client_id`'s, unused, unexpired and
        not revoked; exactly one of any number of concurrent callers gets it."""
        values = {"h": code_hash, "cid": client_id, "now": now}
        return await self._row(self.sql.CONSUME_CODE, self._consumed, values)

    async def grant_by_code(self, code_hash: str) -> Grant | None:
        return await self._row(self.sql.GRANT_BY_CODE, self._grant, {"h": code_hash})

    async def grant(self, grant_id: str) -> Grant | None:
        return await self._row(self.sql.GRANT, self._grant, {"gid": grant_id})

    async def revoke_grant(self, grant_id: str, now: int) -> None:
        """End the grant: its code, its access tokens (checked against it) and its refresh tokens."""
        async with self.db.transaction() as tx:
            await tx.execute(self.sql.REVOKE_GRANT, {"gid": grant_id, "now": now})
            await tx.execute(self.sql.END_REFRESH_FAMILY, {"gid": grant_id, "now": now})

    async def add_refresh_token(self, token: RefreshToken) -> None:
        await self.db.execute(self.sql.INSERT_REFRESH, vars(token))

    async def rotate_refresh(
        self, token_hash: str, now: int, successor_hash: str, successor_expires_at: int
    ) -> Grant | None:
        """Mark the refresh token used, once, and store its successor in the same transaction;
        the grant it continues, or None when the token is unknown, expired or already used
        (`refresh_token` tells which). Together, so that a failure between the two (the database
        restarting) never leaves the client's token used with no successor stored: the client
        would present it again, a reuse that revokes the whole family (RFC 9700 4.14.2)."""
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(self.sql.USE_REFRESH, {"h": token_hash, "now": now})
            if row is None:
                return None
            used = self._used_refresh(row)
            successor = RefreshToken(successor_hash, used.grant_id, now, successor_expires_at, None)
            await tx.execute(self.sql.INSERT_REFRESH, vars(successor))
        return await self.grant(used.grant_id)

    async def refresh_token(self, token_hash: str) -> RefreshToken | None:
        return await self._row(self.sql.REFRESH_TOKEN, self._refresh, {"h": token_hash})

    async def token_subject(self, grant_id: str) -> TokenSubject | None:
        """The grant, if not revoked, with its user's claims (userinfo, records): one statement."""
        return await self._row(self.sql.TOKEN_SUBJECT, self._subject, {"gid": grant_id})


def _config_values(config: ClientConfig) -> dict:
    return {
        "new_name": config.name,
        "new_description": config.description,
        "new_redirect_uris": list(config.redirect_uris),
        "new_scopes": list(config.scopes),
        "new_justifications": dict(config.justifications),
        "new_sector_identifier_uri": config.sector_identifier_uri,
        "new_grant_types": list(config.grant_types),
        "new_post_logout_redirect_uris": list(config.post_logout_redirect_uris),
        "new_backchannel_logout_uri": config.backchannel_logout_uri,
    }
