"""The keys repository: the IdP's signing keys (idp/keys.py decides which sign and which are published)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import bindparam, delete, insert, select

from campusid.idp.store.database import Database
from campusid.idp.store.repository import Repository, row_maker
from campusid.idp.store.rows import SigningKey
from campusid.idp.store.schema import signing_keys

KEYS = select(signing_keys).order_by(signing_keys.c.activates_at, signing_keys.c.kid)
INSERT_KEY = insert(signing_keys)
DELETE_KEY = delete(signing_keys).where(signing_keys.c.kid == bindparam("kid"))


class Keys(Repository):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._all = db.prepare("KEYS", KEYS)
        self._insert = db.prepare("INSERT_KEY", INSERT_KEY)
        self._delete = db.prepare("DELETE_KEY", DELETE_KEY)
        self._key = row_maker(SigningKey, self._all)

    async def add(self, key: SigningKey) -> None:
        await self.db.execute(self._insert, vars(key))

    async def list(self) -> list[SigningKey]:
        """Every key, in the order they activate."""
        return await self._rows(self._all, self._key)

    async def delete(self, kids: Iterable[str]) -> None:
        """Delete the keys `kids` names, together."""
        kids = list(kids)
        if kids:
            async with self.db.transaction() as tx:
                await tx.execute_many(self._delete, [{"kid": kid} for kid in kids])
