"""Grant ids: time-ordered, unique, not secret.

A grant's id is 32 hex digits: a 48-bit millisecond Unix clock, then 80 random bits from
`secrets` (the layout of a UUIDv7, RFC 9562 section 5.7, without its version and variant bits).
Why time first: `grants.id` is a primary key and `refresh_tokens.grant_id` an index, and a
random key lands each insert on a random leaf of those B-trees, which in a grown database (a
million users, millions of grants) is a leaf not in cache, and a page more written per insert
(SQLite's WAL, PostgreSQL's WAL and full-page images). Keys that grow with the clock are
inserted at the right edge of the tree, in pages that are already being written, and the purge,
which deletes old grants, empties contiguous leaves instead of a row here and there in all of
them.

The id is not a credential: it is the `gid` claim of access tokens (next to `iat`, which already
tells when the grant's tokens were minted) and is only ever accepted inside a signed token. The
80 random bits keep ids unique across workers and hosts minting in the same millisecond (two
equal ids need ~2^40 grants in one millisecond; a primary key refuses a duplicate anyway). Within
one millisecond the ids are in random order, which costs nothing: they share a leaf.
"""

from __future__ import annotations

import secrets
import time

_CLOCK_BITS = 48
_RANDOM_BITS = 80
GRANT_ID_LENGTH = (_CLOCK_BITS + _RANDOM_BITS) // 4  # hex digits (the column is String(32))


def new_grant_id(now_ms: int | None = None) -> str:
    """A new grant id led by `now_ms` (the wall clock in milliseconds unless given)."""
    ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    return f"{ms % (1 << _CLOCK_BITS):012x}{secrets.randbits(_RANDOM_BITS):020x}"
