"""What the account rules and changes raise; each message says why, in words an operator can act on."""

from __future__ import annotations


class AccountError(Exception):
    """A change that cannot be made; the message says why."""


class InvalidAccount(AccountError):
    """A value breaks one of the account rules (rules.py): nothing was written."""


class Taken(AccountError):
    """Another account holds this username or student number (both are unique)."""

    def __init__(self, field: str, value: str) -> None:
        self.field, self.value = field, value
        what = f"named {value!r}" if field == "username" else f"with student number {value!r}"
        super().__init__(f"a user {what} exists already")
