"""The users repository: accounts, their roles and passwords, disabling one, and the local copies
of directory accounts (store/directory.py says how a directory entry maps to its copy).

A directory person (LDAP / AD) gets a local copy at their first sign-in, refreshed from the
directory at every later one (username, claims and role, just in time), under an id derived from
the entry's stable identifier, so a renamed uid keeps the same account and pairwise `sub`.
"""

from __future__ import annotations

from sqlalchemy import bindparam, insert, null, select, update

from campusid.idp.store.database import Database
from campusid.idp.store.directory import DIRECTORY
from campusid.idp.store.errors import Conflict
from campusid.idp.store.grants import Grants
from campusid.idp.store.notices import Notices
from campusid.idp.store.repository import Repository, row_maker, typed
from campusid.idp.store.rows import Ended, User
from campusid.idp.store.schema import users
from campusid.idp.store.sessions import Sessions

_c = users.c

USER_BY_NAME = select(users).where(_c.username == bindparam("name"))
USER_BY_ID = select(users).where(_c.id == bindparam("uid"))
USERS = select(users).order_by(_c.username)
INSERT_USER = insert(users)
# Only a local account has a password here: a directory account's is the directory's, never set.
SET_PASSWORD_HASH = (
    update(users)
    .where(_c.id == bindparam("uid"), _c.source == "local")
    .values(password_hash=typed("hash", _c.password_hash))
)
SET_ROLE = update(users).where(_c.id == bindparam("uid")).values(role=typed("new_role", _c.role))
# Conditional on the current state, so a second disable (or enable) changes nothing and says so.
DISABLE_USER = (
    update(users)
    .where(_c.id == bindparam("uid"), _c.disabled_at.is_(None))
    .values(disabled_at=typed("at", _c.disabled_at))
)
ENABLE_USER = update(users).where(_c.id == bindparam("uid"), _c.disabled_at.is_not(None)).values(disabled_at=null())

_CLAIMS = ("username", "name", "given_name", "family_name", "email", "student_number", "role")
# Only ever a directory copy: a local account of the same id (impossible by construction) is not touched.
REFRESH_DIRECTORY_USER = (
    update(users)
    .where(_c.id == bindparam("uid"), _c.source == DIRECTORY)
    .values({name: bindparam(name, type_=_c[name].type) for name in _CLAIMS})
    .returning(*users.c)
)
# `directory sync`: every directory copy (the users.source index), with its stable identifier.
DIRECTORY_USERS = (
    select(_c.id, _c.username, _c.external_id, _c.disabled_at).where(_c.source == DIRECTORY).order_by(_c.username)
)


class Users(Repository):
    def __init__(self, db: Database, sessions: Sessions, notices: Notices, grants: Grants) -> None:
        super().__init__(db)
        self._sessions, self._notices, self._grants = sessions, notices, grants
        self._by_name = db.prepare("USER_BY_NAME", USER_BY_NAME)
        self._by_id = db.prepare("USER_BY_ID", USER_BY_ID)
        self._all = db.prepare("USERS", USERS)
        self._insert = db.prepare("INSERT_USER", INSERT_USER)
        self._set_password_hash = db.prepare("SET_PASSWORD_HASH", SET_PASSWORD_HASH)
        self._set_role = db.prepare("SET_ROLE", SET_ROLE)
        self._disable = db.prepare("DISABLE_USER", DISABLE_USER)
        self._enable = db.prepare("ENABLE_USER", ENABLE_USER)
        self._refresh_directory = db.prepare("REFRESH_DIRECTORY_USER", REFRESH_DIRECTORY_USER)
        self._directory = db.prepare("DIRECTORY_USERS", DIRECTORY_USERS)
        self._user = row_maker(User, self._by_id)

    async def add(self, user: User) -> User:
        """Raises Conflict when the username or student number is taken."""
        await self.db.execute(self._insert, vars(user))
        return user

    async def get(self, user_id: str) -> User | None:
        return await self._row(self._by_id, self._user, {"uid": user_id})

    async def by_username(self, username: str) -> User | None:
        return await self._row(self._by_name, self._user, {"name": username})

    async def list(self) -> list[User]:
        """Every account, by username."""
        return await self._rows(self._all, self._user)

    async def set_password_hash(self, user_id: str, password_hash: str) -> bool:
        """False when the account is not a local one (a directory account has no password here)."""
        return bool(await self.db.execute(self._set_password_hash, {"uid": user_id, "hash": password_hash}))

    async def set_role(self, user_id: str, role: str) -> None:
        await self.db.execute(self._set_role, {"uid": user_id, "new_role": role})

    async def disable(self, user_id: str, now: int) -> Ended | None:
        """Disable the account and, in the same transaction, end every session of it and revoke
        every grant (its codes, access and refresh tokens), queueing the apps' back-channel logout
        notices first (they read the grants before they are revoked). None when it was disabled
        already."""
        async with self.db.transaction() as tx:
            if not await tx.execute(self._disable, {"uid": user_id, "at": now}):
                return None
            sids = await self._sessions.end_all_of_user(tx, user_id)
            await self._notices.enqueue_for_user(tx, user_id, now)
            grants = await self._grants.revoke_of_user(tx, user_id, now)
        return Ended(user_id, tuple(sids), tuple(grants))

    async def enable(self, user_id: str) -> bool:
        """Let a disabled account sign in again; False when it was not disabled."""
        return bool(await self.db.execute(self._enable, {"uid": user_id}))

    # -- the local copies of directory accounts ------------------------------------------------
    async def refresh_directory_copy(self, user: User) -> User:
        """Create or update the local copy of a directory person (just in time). Raises Conflict
        when its username or student number is taken by another account."""
        values = {"uid": user.id, **{name: getattr(user, name) for name in _CLAIMS}}
        for _ in range(2):
            row = await self.db.fetch_one(self._refresh_directory, values)
            if row is not None:
                return self._user(row)
            try:
                await self.db.execute(self._insert, vars(user))
                return user
            except Conflict:
                # a first sign-in of the same person on another worker, or the name is taken
                if await self.get(user.id) is None:
                    raise
        raise Conflict("the directory account could not be saved")

    async def directory_copies(self) -> list[tuple[str, str, str, int | None]]:
        """(id, username, external id, disabled_at) of every directory copy."""
        return [tuple(row) for row in await self.db.fetch_all(self._directory)]
