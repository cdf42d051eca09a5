"""What the storage layer raises, so the layers above can answer without knowing the database."""

from __future__ import annotations


class StoreError(RuntimeError):
    """The database cannot be opened or migrated; the message says why."""


class StoreUnavailable(StoreError):
    """The database cannot be reached right now (down, restarting, out of connections).

    Raised by the store for a statement it could not run, never for a statement the database
    refused. The web layer answers it with 503 and `Retry-After` (a protocol error, not a 500);
    the request may be retried once the database is back."""

    retry_after = 5


class Conflict(StoreError):
    """A unique value is taken (a username, a student number, a client_id)."""
