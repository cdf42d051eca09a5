"""The events repository: the security events (the audit trail of sign-ins, tokens and changes).

Recording is one INSERT. Listing is newest first, a page at a time by id (keyset paging: the next
page starts below the last id shown, so a page costs the same however deep it is); each optional
filter is one equality that an index of (filter column, id) serves in that order. The statement
for each combination of filters is built from the Core table and compiled at start, like every
other statement.
"""

from __future__ import annotations

from itertools import combinations

from sqlalchemy import bindparam, insert, select
from sqlalchemy.sql import Select

from campusid.idp.store.database import Database, Prepared
from campusid.idp.store.repository import Repository, check_columns
from campusid.idp.store.rows import Event
from campusid.idp.store.schema import events

FILTERS = ("username", "client_id", "type")
INSERT_EVENT = insert(events).values({c.name: bindparam(c.name, type_=c.type) for c in events.c if c.name != "id"})


def events_page(filters: frozenset[str], since: bool) -> Select:
    """Events below `before_id`, newest first, at most `limit`; equal to each named filter, and at
    or after `since` when asked."""
    stmt = select(events).where(events.c.id < bindparam("before_id"))
    for name in sorted(filters):
        stmt = stmt.where(events.c[name] == bindparam(name))
    if since:
        stmt = stmt.where(events.c.at >= bindparam("since"))
    return stmt.order_by(events.c.id.desc()).limit(bindparam("limit"))


INSERT_EVENT_NAMES = tuple(c.name for c in events.c if c.name != "id")


def _page_name(filters: frozenset[str], since: bool) -> str:
    return "EVENTS_PAGE_" + ("_".join([*sorted(filters), *(["since"] if since else [])]).upper() or "ALL")


class Events(Repository):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._insert = db.prepare("INSERT_EVENT", INSERT_EVENT)
        # The page statement of every combination of filters, compiled (and checked) at start.
        self._pages: dict[tuple[frozenset[str], bool], Prepared] = {}
        for size in range(len(FILTERS) + 1):
            for chosen in combinations(FILTERS, size):
                for since in (False, True):
                    key = (frozenset(chosen), since)
                    self._pages[key] = check_columns(db.prepare(_page_name(*key), events_page(*key)), Event)

    async def record(self, event: Event) -> None:
        values = {name: getattr(event, name) for name in INSERT_EVENT_NAMES}
        await self.db.execute(self._insert, values)

    async def list(
        self,
        *,
        username: str | None = None,
        client_id: str | None = None,
        type: str | None = None,  # noqa: A002 - the column's name
        since: int | None = None,
        before_id: int | None = None,
        limit: int = 50,
    ) -> list[Event]:
        """A page of events, newest first; pass the last one's id as `before_id` for the next."""
        wanted = {"username": username, "client_id": client_id, "type": type}
        filters = frozenset(name for name, value in wanted.items() if value is not None)
        q = self._pages[(filters, since is not None)]
        values = {name: wanted[name] for name in filters}
        values.update(before_id=before_id if before_id is not None else 2**62, limit=limit)
        if since is not None:
            values["since"] = since
        return [Event(*row) for row in await self.db.fetch_all(q, values)]
