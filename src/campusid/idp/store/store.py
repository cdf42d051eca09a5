"""The store: the repositories of the domain over one database.

Everything the IdP, the CLI and the review workflow read or write goes through a repository's
methods (`store.users.get(user_id)`, `store.grants.consume_code(…)`); none of them builds SQL.
Each repository owns its statements, prepared once when the store opens, and returns the frozen
rows of rows.py. The rules that decide security outcomes are single conditional statements, so
exactly one of any number of concurrent callers wins, on any number of workers:
`grants.consume_code` (a code is used once), `grants.rotate_refresh` (a refresh token is used
once), `sessions.finish_interaction` / `sessions.complete_login` (a sign-in completes once) and
the changes of an app's review state (each conditional on the state it was read in).

The two databases differ only in how statements reach them (the Database of sqlite.py,
postgres.py) and in two repositories' subclasses: a successful login's writes (sessions) and
the housekeeping lock (janitor).
"""

from __future__ import annotations

from sqlalchemy import literal, select

from campusid.idp.store.apps import Apps
from campusid.idp.store.cas import Cas
from campusid.idp.store.database import Database, Prepared
from campusid.idp.store.devices import Devices
from campusid.idp.store.events import Events
from campusid.idp.store.factors import Factors
from campusid.idp.store.grants import Grants
from campusid.idp.store.janitor import Janitor
from campusid.idp.store.keys import Keys
from campusid.idp.store.notices import Notices
from campusid.idp.store.repository import Repository
from campusid.idp.store.sessions import Sessions
from campusid.idp.store.users import Users

# The readiness check's round trip (idp/web/health.py).
PING = select(literal(1))


class Store:
    """The repositories over `db`. A database's store names its subclasses of Sessions and Janitor."""

    sessions_class: type[Sessions] = Sessions
    janitor_class: type[Janitor] = Janitor
    cas_class: type[Cas] = Cas

    def __init__(self, db: Database) -> None:
        self.db = db
        # Built in the order they need each other: a repository that ends sessions, accounts or
        # apps revokes their grants and queues their notices in its own transaction.
        self.notices = Notices(db)
        self.cas = self.cas_class(db)
        self.notices.add_face(self.cas)  # a session's end ends its CAS tickets and queues their logouts
        self.grants = Grants(db)
        self.sessions = self.sessions_class(db, self.grants, self.notices)
        self.users = Users(db, self.sessions, self.notices, self.grants)
        self.apps = Apps(db, self.grants, self.notices)
        self.devices = Devices(db, self.grants)
        self.factors = Factors(db)
        self.events = Events(db)
        self.keys = Keys(db)
        self.janitor = self.janitor_class(db)
        self._ping = db.prepare("PING", PING)

    def repositories(self) -> tuple[Repository, ...]:
        return (
            self.users,
            self.apps,
            self.sessions,
            self.grants,
            self.devices,
            self.factors,
            self.events,
            self.notices,
            self.cas,
            self.janitor,
            self.keys,
        )

    def prepared(self) -> list[Prepared]:
        """Every statement this store runs, compiled for its database."""
        return [self._ping, *(q for repository in self.repositories() for q in repository.prepared())]

    # -- lifetime ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Open the running event loop's connections (PostgreSQL); statements work without, slower."""
        await self.db.start()

    async def stop(self) -> None:
        await self.db.stop()

    async def ping(self) -> None:
        """One round trip to the database; StoreUnavailable when it cannot be reached."""
        await self.db.fetch_one(self._ping)

    async def __aenter__(self) -> Store:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def close(self) -> None:
        self.db.close()
