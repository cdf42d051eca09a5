"""The CAS repository at rest: expired tickets and the validations of expired sessions are purged
by the janitor, live ones kept; a session's end deletes its tickets (its PGTs too)."""

from __future__ import annotations

import time

from campusid.idp import housekeeping
from campusid.idp.cas.rules.tickets import new_ticket, ticket_hash
from campusid.idp.store.rows import CasTicket, CasValidation
from tests.idp.helpers import run


def ticket(user_id: str, kind: str, expires_at: int, sid: str = "s1") -> CasTicket:
    return CasTicket(
        id_hash=ticket_hash(new_ticket(kind)),
        kind=kind,
        client_id="portal",
        service="https://portal.example.edu/portal/",
        user_id=user_id,
        sid=sid,
        auth_time=expires_at - 100,
        new_login=True,
        proxies=(),
        created_at=expires_at - 60,
        expires_at=expires_at,
        session_expires_at=expires_at + 3600,
    )


def test_the_janitor_purges_expired_tickets_and_lapsed_validations(idp):
    now = int(time.time())
    uid = idp.student.id
    dead, live, pgt = ticket(uid, "ST", now - 1), ticket(uid, "ST", now + 60), ticket(uid, "PGT", now + 3600)
    for t in (dead, live, pgt):
        idp.db.cas.issue(t)
    gone = CasValidation("portal", uid, "s0", "https://p/", "sealed", now - 99, now - 1)
    kept = CasValidation("portal", uid, "s1", "https://p/", "sealed", now - 9, now + 3600)
    event = idp.ctx.events.event("cas_ticket_validated", detail="seeded")
    for v in (gone, kept):
        idp.db.cas.validated(v, event)
    dry = run(idp.store, housekeeping.purge(idp.store, idp.settings, now, dry_run=True))
    assert dry["cas_tickets"] == 1 and dry["cas_validations"] == 1
    purged = run(idp.store, housekeeping.purge(idp.store, idp.settings, now))
    assert purged["cas_tickets"] == 1 and purged["cas_validations"] == 1
    assert idp.db.cas.find(dead.id_hash) is None
    assert idp.db.cas.find(live.id_hash) is not None and idp.db.cas.find(pgt.id_hash) is not None
    assert idp.db.cas.validations_of_session(uid, "s0") == [] and len(idp.db.cas.validations_of_session(uid, "s1")) == 1
