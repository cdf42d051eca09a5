"""CAS tickets (Apereo CAS Protocol 3.0.3 3.1-3.4, 3.7): a kind prefix, then at least 128 random
bits from `secrets` in [A-Za-z0-9] (3.7: "the ticket MUST only contain characters from the set
{A-Z, a-z, 0-9}" after the prefix; no "-" or "_" from token_urlsafe), at most 64 characters in all
(clients MUST accept 32, SHOULD accept 256). The database keeps only their SHA-256."""

from __future__ import annotations

import secrets
import string

from campusid.idp.crypto import token_hash

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
