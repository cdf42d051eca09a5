"""CAS tickets (Apereo CAS Protocol 3.0.3 3.1-3.4, 3.7): a kind prefix, then at least 128 random
bits from `secrets` in [A-Za-z0-9] (3.7: "the ticket MUST only contain characters from the set
{A-Z, a-z, 0-9}" after the prefix; no "-" or "_" from token_urlsafe), at most 64 characters in all
(clients MUST accept 32, SHOULD accept 256). The database keeps only their SHA-256.

Every ticket is issued the one way (`issue`): bound to one app and the exact service, and to the
sign-in it comes from (a service ticket's SSO session, or the ticket a PGT or PT derives from), so
validation can release the user, single logout can find it, and it dies with its session."""

from __future__ import annotations

import secrets
import string
from typing import Protocol

from campusid.idp.crypto import token_hash
from campusid.idp.store.rows import CasTicket

ST, PT, PGT, PGTIOU = "ST", "PT", "PGT", "PGTIOU"
KINDS = (ST, PT, PGT, PGTIOU)
ALPHABET = string.ascii_letters + string.digits
RANDOM_CHARS = 32  # 32 * log2(62) = 190 bits (>= 128)
MAX_TICKET = 64  # what we issue; a presented value up to 256 is read (validation.py)


def new_ticket(kind: str) -> str:
    """A fresh ticket of `kind`: `ST-` + 32 characters of [A-Za-z0-9], 190 bits."""
    if kind not in KINDS:
        raise ValueError(f"unknown ticket kind {kind!r}")
    return f"{kind}-" + "".join(secrets.choice(ALPHABET) for _ in range(RANDOM_CHARS))


def kind_of(ticket: str) -> str | None:
    """The kind a presented ticket claims by its prefix (3.1-3.4), or None for no known prefix.
    `PGTIOU-` is tested before `PGT-` (which it also begins with)."""
    for kind in (PGTIOU, PGT, ST, PT):
        if ticket.startswith(kind + "-") and len(ticket) > len(kind) + 1:
            return kind
    return None


def ticket_hash(ticket: str) -> str:
    """What the database keeps of a ticket (its SHA-256, as for codes and tokens)."""
    return token_hash(ticket)


class SignedIn(Protocol):
    """What a ticket takes of the sign-in it comes from: a SignIn, or the CasTicket it derives from."""

    user_id: str
    sid: str
    auth_time: int


def issue(
    kind: str,
    client_id: str,
    service: str,
    of: SignedIn,
    session_expires_at: int,
    now: int,
    *,
    lifetime: int | None,
    new_login: bool = False,
    proxies: tuple[str, ...] = (),
) -> tuple[str, CasTicket]:
    """A new ticket of `kind` and its row to store: for the app `client_id` and the exact `service`
    (a PGT: its pgtUrl), of the sign-in `of`; it ends `lifetime` seconds from `now`, or with the SSO
    session when None (a PGT, CAS 3.0 3.3); `proxies`: the proxy chain, most recent first (3.4)."""
    ticket = new_ticket(kind)
    row = CasTicket(
        id_hash=ticket_hash(ticket),
        kind=kind,
        client_id=client_id,
        service=service,
        user_id=of.user_id,
        sid=of.sid,
        auth_time=of.auth_time,
        new_login=new_login,
        proxies=proxies,
        created_at=now,
        expires_at=session_expires_at if lifetime is None else now + lifetime,
        session_expires_at=session_expires_at,
    )
    return ticket, row
