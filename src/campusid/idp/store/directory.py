"""Directory accounts' statements and the store's methods for them (a mixin of `Store`).

A person from the university directory (LDAP / AD) gets a local copy at their first sign-in and
at every later one it is refreshed from the directory: username, claims and role (just in time).
The copy's id is derived from the entry's stable identifier (entryUUID / objectGUID), never from
the username, so a renamed uid keeps the same account and the same pairwise `sub` (OIDC Core 8.1).
Its password hash is a marker no password verifies: the password is the directory's, never stored.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import bindparam, insert, select, update

from campusid.idp.store.errors import Conflict
from campusid.idp.store.rows import User
from campusid.idp.store.schema import users

DIRECTORY = "directory"
# Not an argon2 hash: no password ever verifies against it (the directory checks passwords).
NO_LOCAL_PASSWORD = "!directory"
_c = users.c


def directory_user_id(external_id: str) -> str:
    """The local id of the directory entry whose stable identifier is `external_id`."""
    return hashlib.sha256(b"campusid directory user\0" + external_id.encode()).hexdigest()[:32]


_CLAIMS = ("username", "name", "given_name", "family_name", "email", "student_number", "role")
# Only ever a directory copy: a local account of the same id (impossible by construction) is not touched.
REFRESH_DIRECTORY_USER = (
    update(users)
    .where(_c.id == bindparam("uid"), _c.source == DIRECTORY)
    .values({name: bindparam(name, type_=_c[name].type) for name in _CLAIMS})
    .returning(*users.c)
)
INSERT_DIRECTORY_USER = insert(users)
# `directory sync`: every directory copy (the users.source index), with its stable identifier.
DIRECTORY_USERS = (
    select(_c.id, _c.username, _c.external_id, _c.disabled_at).where(_c.source == DIRECTORY).order_by(_c.username)
)


class DirectoryStore:
    async def refresh_directory_user(self, user: User) -> User:
        """Create or update the local copy of a directory person (just in time). Raises Conflict
        when its username or student number is taken by another account."""
        values = {"uid": user.id, **{name: getattr(user, name) for name in _CLAIMS}}
        for _ in range(2):
            row = await self.db.fetch_one(self.sql.REFRESH_DIRECTORY_USER, values)
            if row is not None:
                return self._user(row)
            try:
                await self.db.execute(self.sql.INSERT_DIRECTORY_USER, vars(user))
                return user
            except Conflict:
                # a first sign-in of the same person on another worker, or the name is taken
                if await self.user(user.id) is None:
                    raise
        raise Conflict("the directory account could not be saved")

    async def directory_users(self) -> list[tuple[str, str, str, int | None]]:
        """(id, username, external id, disabled_at) of every directory copy."""
        return [tuple(row) for row in await self.db.fetch_all(self.sql.DIRECTORY_USERS)]
