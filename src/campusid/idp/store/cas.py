"""The CAS repository: tickets (kept as hashes), /cas/login's one read, the tickets validated in
each session, and the CAS part of ending sessions (docs/cas.md).

Single use is one conditional statement: `consume` is an UPDATE … SET used_at … WHERE used_at IS
NULL … RETURNING, so of any number of concurrent validations of one ticket, on any number of
workers, exactly one gets the row; every other finds it used (a replay). On PostgreSQL the UPDATE
is a data-modifying CTE whose row comes back joined with its user and app: a validation reads
everything in that one round trip, and a success writes its record and its event in one more
(`PostgresCas`). SQLite's RETURNING cannot be joined, so there the join is a second statement,
run in this process in microseconds.

Whatever ends a session (logout, the account page, disabling the account, suspending an app) runs
this repository's part in its own transaction (`session_ended`, `user_disabled`,
`client_suspended`, through the notices repository): each validated ticket of the session becomes a
CAS logout notice, and the session's tickets (its proxy-granting tickets too) are deleted.
"""

from __future__ import annotations

from dataclasses import fields

from sqlalchemy import BigInteger, Integer, String, and_, bindparam, delete, insert, literal, select, update

from campusid.idp.store.database import Database, Queries
from campusid.idp.store.events import INSERT_EVENT, INSERT_EVENT_NAMES
from campusid.idp.store.repository import Repository, row_maker
from campusid.idp.store.rows import (
    CasLoginContext,
    CasPerson,
    CasTicket,
    CasValidation,
    Client,
    ConsumedTicket,
    Event,
    Session,
)
from campusid.idp.store.schema import (
    CLIENT_COLUMNS,
    CLIENT_JOIN,
    cas_services,
    cas_tickets,
    cas_validations,
    clients,
    events,
    logout_notices,
    sessions,
    users,
)

_t, _v = cas_tickets.c, cas_validations.c
_NOW = bindparam("now", type_=BigInteger())
_PERSON = (
    users.c.username,
    users.c.name,
    users.c.given_name,
    users.c.family_name,
    users.c.email,
    users.c.student_number,
)

# /cas/login: the active apps with a service at this origin, and this browser's live session.
CAS_LOGIN_CONTEXT = (
    select(cas_services.c.path, *CLIENT_COLUMNS, *sessions.c)
    .select_from(
        cas_services.join(CLIENT_JOIN, clients.c.client_id == cas_services.c.client_id).outerjoin(
            sessions, and_(sessions.c.id_hash == bindparam("session"), sessions.c.expires_at > _NOW)
        )
    )
    .where(cas_services.c.origin == bindparam("origin"), clients.c.state == "active")
)
# The active apps with a service at this origin (a targetService at /proxy).
CAS_SERVICES_AT = (
    select(cas_services.c.path, *CLIENT_COLUMNS)
    .select_from(cas_services.join(CLIENT_JOIN, clients.c.client_id == cas_services.c.client_id))
    .where(cas_services.c.origin == bindparam("origin"), clients.c.state == "active")
)
# A live session by its sid (a PGT is granted for as long as it lives).
SESSION_BY_SID = select(sessions).where(sessions.c.sid == bindparam("sid"), sessions.c.expires_at > _NOW)
INSERT_CAS_TICKET = insert(cas_tickets)
# The single-use rule (CAS 3.0 3.1.1, 3.2.1): the one caller whose UPDATE matched has the ticket.
CONSUME_CAS_TICKET = (
    update(cas_tickets)
    .where(_t.id_hash == bindparam("h"), _t.kind != "PGT", _t.used_at.is_(None))
    .values(used_at=_NOW)
    .returning(*cas_tickets.c)
)
# SQLite's second statement of a validation: the ticket's user and app.
CAS_TICKET_SUBJECT = (
    select(*_PERSON, *CLIENT_COLUMNS)
    .select_from(users.outerjoin(CLIENT_JOIN, clients.c.client_id == bindparam("cid")))
    .where(users.c.id == bindparam("uid"))
)
CAS_TICKET = select(cas_tickets).where(_t.id_hash == bindparam("h"))
DELETE_CAS_TICKET = delete(cas_tickets).where(_t.id_hash == bindparam("h"))
LIVE_PGT = select(cas_tickets).where(_t.id_hash == bindparam("h"), _t.kind == "PGT", _t.expires_at > _NOW)
_VALIDATION_COLUMNS = [c for c in cas_validations.c if c.name != "id"]
INSERT_CAS_VALIDATION = insert(cas_validations).values(
    {c.name: bindparam(c.name, type_=c.type) for c in _VALIDATION_COLUMNS}
)
VALIDATIONS_OF_SESSION = (
    select(*_VALIDATION_COLUMNS).where(_v.user_id == bindparam("uid"), _v.sid == bindparam("sid")).order_by(_v.id)
)


def _enqueue(which):
    """INSERT … SELECT of one CAS logout notice per validated ticket that `which` selects."""
    rows = select(
        _v.client_id,
        _v.user_id,
        _v.sid,
        _NOW,
        _NOW,
        literal(0, Integer()),
        literal("cas", String()),
        _v.service,
        _v.ticket_sealed,
    ).where(which)
    columns = ["client_id", "user_id", "sid", "created_at", "next_at", "attempts", "face", "target", "session_index"]
    return insert(logout_notices).from_select(columns, rows)


_OF_SESSION_V = and_(_v.user_id == bindparam("uid"), _v.sid == bindparam("sid"))
_OF_SESSION_T = and_(_t.user_id == bindparam("uid"), _t.sid == bindparam("sid"))
ENQUEUE_CAS_SESSION_NOTICES = _enqueue(_OF_SESSION_V)
ENQUEUE_CAS_USER_NOTICES = _enqueue(_v.user_id == bindparam("uid"))
ENQUEUE_CAS_CLIENT_NOTICES = _enqueue(_v.client_id == bindparam("cid"))
END_CAS_SESSION_VALIDATIONS = delete(cas_validations).where(_OF_SESSION_V)
END_CAS_USER_VALIDATIONS = delete(cas_validations).where(_v.user_id == bindparam("uid"))
END_CAS_CLIENT_VALIDATIONS = delete(cas_validations).where(_v.client_id == bindparam("cid"))
END_CAS_SESSION_TICKETS = delete(cas_tickets).where(_OF_SESSION_T)
END_CAS_USER_TICKETS = delete(cas_tickets).where(_t.user_id == bindparam("uid"))
END_CAS_CLIENT_TICKETS = delete(cas_tickets).where(_t.client_id == bindparam("cid"))

_TICKET_WIDTH = len(fields(CasTicket))
_PERSON_WIDTH = len(_PERSON)


class Cas(Repository):
    """Each database's store names its class (sqlite.py: this one; postgres.py: PostgresCas)."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._login_context = db.prepare("CAS_LOGIN_CONTEXT", CAS_LOGIN_CONTEXT)
        self._services_at = db.prepare("CAS_SERVICES_AT", CAS_SERVICES_AT)
        self._session_by_sid = db.prepare("CAS_SESSION_BY_SID", SESSION_BY_SID)
        self._insert = db.prepare("INSERT_CAS_TICKET", INSERT_CAS_TICKET)
        self._consume = db.prepare("CONSUME_CAS_TICKET", CONSUME_CAS_TICKET)
        self._subject = db.prepare("CAS_TICKET_SUBJECT", CAS_TICKET_SUBJECT)
        self._by_hash = db.prepare("CAS_TICKET", CAS_TICKET)
        self._live_pgt = db.prepare("LIVE_PGT", LIVE_PGT)
        self._delete = db.prepare("DELETE_CAS_TICKET", DELETE_CAS_TICKET)
        self._insert_validation = db.prepare("INSERT_CAS_VALIDATION", INSERT_CAS_VALIDATION)
        self._validations_of_session = db.prepare("CAS_VALIDATIONS_OF_SESSION", VALIDATIONS_OF_SESSION)
        # SQLite's record of a success writes its event in the same transaction (PostgreSQL's in the
        # same statement): the events repository's INSERT, prepared here for that transaction.
        self._insert_event = db.prepare("CAS_INSERT_EVENT", INSERT_EVENT)
        self._session_ended = (
            db.prepare("ENQUEUE_CAS_SESSION_NOTICES", ENQUEUE_CAS_SESSION_NOTICES),
            db.prepare("END_CAS_SESSION_VALIDATIONS", END_CAS_SESSION_VALIDATIONS),
            db.prepare("END_CAS_SESSION_TICKETS", END_CAS_SESSION_TICKETS),
        )
        self._user_disabled = (
            db.prepare("ENQUEUE_CAS_USER_NOTICES", ENQUEUE_CAS_USER_NOTICES),
            db.prepare("END_CAS_USER_VALIDATIONS", END_CAS_USER_VALIDATIONS),
            db.prepare("END_CAS_USER_TICKETS", END_CAS_USER_TICKETS),
        )
        self._client_suspended = (
            db.prepare("ENQUEUE_CAS_CLIENT_NOTICES", ENQUEUE_CAS_CLIENT_NOTICES),
            db.prepare("END_CAS_CLIENT_VALIDATIONS", END_CAS_CLIENT_VALIDATIONS),
            db.prepare("END_CAS_CLIENT_TICKETS", END_CAS_CLIENT_TICKETS),
        )
        self._ticket = row_maker(CasTicket, self._by_hash)
        self._validation = row_maker(CasValidation, self._validations_of_session)
        self._session = row_maker(Session, self._session_by_sid)
        self._login_client = row_maker(Client, self._login_context, start=1)
        self._login_session = row_maker(Session, self._login_context, start=1 + len(fields(Client)))
        self._at_client = row_maker(Client, self._services_at, start=1)
        self._subject_person = row_maker(CasPerson, self._subject)
        self._subject_client = row_maker(Client, self._subject, start=_PERSON_WIDTH)

    def prepared(self):
        out = super().prepared()
        for group in (self._session_ended, self._user_disabled, self._client_suspended):
            out.extend(group)
        return out

    # -- /cas/login --------------------------------------------------------------------------
    async def login_context(self, origin: str, session_hash: str | None, now: int) -> CasLoginContext:
        """The active apps with a service at `origin` ((path, app) each) and this browser's live
        session, in one statement (the session only comes with a service: none, none)."""
        rows = await self.db.fetch_all(self._login_context, {"origin": origin, "session": session_hash, "now": now})
        found = tuple((row[0], self._login_client(row)) for row in rows)
        session = self._login_session(rows[0]) if rows and rows[0][1 + len(fields(Client))] is not None else None
        return CasLoginContext(found, session)

    async def services_at(self, origin: str) -> list[tuple[str, Client]]:
        return [
            (row[0], self._at_client(row)) for row in await self.db.fetch_all(self._services_at, {"origin": origin})
        ]

    async def session_by_sid(self, sid: str, now: int) -> Session | None:
        return await self._row(self._session_by_sid, self._session, {"sid": sid, "now": now})

    async def issue(self, ticket: CasTicket) -> None:
        await self.db.execute(self._insert, {**vars(ticket), "proxies": list(ticket.proxies)})

    # -- validation --------------------------------------------------------------------------
    async def consume(self, id_hash: str, now: int) -> ConsumedTicket | None:
        """Use the ST or PT whose hash is `id_hash`, if nobody has: it, its user and its app; None
        when it is unknown or used already (`find` tells which)."""
        row = await self.db.fetch_one(self._consume, {"h": id_hash, "now": now})
        if row is None:
            return None
        ticket = self._ticket(row)
        subject = await self.db.fetch_one(self._subject, {"uid": ticket.user_id, "cid": ticket.client_id})
        if subject is None:
            return ConsumedTicket(ticket, None, None)
        client = self._subject_client(subject) if subject[_PERSON_WIDTH] is not None else None
        return ConsumedTicket(ticket, self._subject_person(subject), client)

    async def find(self, id_hash: str) -> CasTicket | None:
        """The ticket whatever its state (to tell a replay from an unknown ticket)."""
        return await self._row(self._by_hash, self._ticket, {"h": id_hash})

    async def forget(self, id_hash: str) -> None:
        """Delete a ticket (a PGT whose callback failed)."""
        await self.db.execute(self._delete, {"h": id_hash})

    async def live_pgt(self, id_hash: str, now: int) -> CasTicket | None:
        return await self._row(self._live_pgt, self._ticket, {"h": id_hash, "now": now})

    async def validated(self, validation: CasValidation, event: Event) -> None:
        """Record a successful validation (single logout will tell its service) and its event."""
        async with self.db.transaction() as tx:
            await tx.execute(self._insert_validation, vars(validation))
            await tx.execute(self._insert_event, _event_values(event))

    async def validations_of_session(self, user_id: str, sid: str) -> list[CasValidation]:
        return await self._rows(self._validations_of_session, self._validation, {"uid": user_id, "sid": sid})

    # -- ending sessions (called with the transaction that ends them) -------------------------
    async def session_ended(self, tx: Queries, user_id: str, sid: str, now: int) -> None:
        for q in self._session_ended:  # the notices first: they read the validations
            await tx.execute(q, {"uid": user_id, "sid": sid, "now": now})

    async def user_disabled(self, tx: Queries, user_id: str, now: int) -> None:
        for q in self._user_disabled:
            await tx.execute(q, {"uid": user_id, "now": now})

    async def client_suspended(self, tx: Queries, client_id: str, now: int) -> None:
        for q in self._client_suspended:
            await tx.execute(q, {"cid": client_id, "now": now})


def _event_values(event: Event) -> dict:
    return {name: getattr(event, name) for name in INSERT_EVENT_NAMES}


# -- PostgreSQL: a validation in two round trips at most -------------------------------------------
def consume_joined_statement():
    """CONSUME_CAS_TICKET as a data-modifying CTE, its row joined with its user and app."""
    consumed = CONSUME_CAS_TICKET.cte("consumed")
    return select(*consumed.c, *_PERSON, *CLIENT_COLUMNS).select_from(
        consumed.outerjoin(users, users.c.id == consumed.c.user_id).outerjoin(
            CLIENT_JOIN, clients.c.client_id == consumed.c.client_id
        )
    )


def validated_statement():
    """The validation's record and its event, one statement."""
    recorded = INSERT_CAS_VALIDATION.returning(_v.id).cte("recorded")
    event_values = [bindparam("e_" + name, type_=events.c[name].type) for name in INSERT_EVENT_NAMES]
    return insert(events).from_select(list(INSERT_EVENT_NAMES), select(*event_values).select_from(recorded))


class PostgresCas(Cas):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._consume_joined = db.prepare("CONSUME_CAS_TICKET_JOINED", consume_joined_statement(), write=True)
        self._validated = db.prepare("CAS_VALIDATED", validated_statement())
        self._joined_ticket = row_maker(CasTicket, self._consume_joined)
        self._joined_person = row_maker(CasPerson, self._consume_joined, start=_TICKET_WIDTH)
        self._joined_client = row_maker(Client, self._consume_joined, start=_TICKET_WIDTH + _PERSON_WIDTH)

    async def consume(self, id_hash: str, now: int) -> ConsumedTicket | None:
        row = await self.db.fetch_one(self._consume_joined, {"h": id_hash, "now": now})
        if row is None:
            return None
        client = self._joined_client(row) if row[_TICKET_WIDTH + _PERSON_WIDTH] is not None else None
        person = self._joined_person(row) if row[_TICKET_WIDTH] is not None else None
        return ConsumedTicket(self._joined_ticket(row), person, client)

    async def validated(self, validation: CasValidation, event: Event) -> None:
        values = {**vars(validation), **{"e_" + k: v for k, v in _event_values(event).items()}}
        await self.db.execute(self._validated, values)
