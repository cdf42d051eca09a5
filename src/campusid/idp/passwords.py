"""User passwords: argon2id with configurable parameters and rehash on login (DESIGN 2)."""

from __future__ import annotations

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError


class Passwords:
    def __init__(self, time_cost: int = 2, memory_cost: int = 19 * 1024, parallelism: int = 1) -> None:
        self._hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_cost, parallelism=parallelism)
        # A hash of a random password, verified when the user does not exist, so an unknown
        # user costs the same time as a wrong password (no user enumeration by timing).
        self._dummy = self._hasher.hash("campusid-dummy-password-for-timing")

    def hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def verify(self, stored_hash: str | None, password: str) -> bool:
        """True when `password` matches; always does one argon2 verification."""
        try:
            return self._hasher.verify(stored_hash or self._dummy, password) and stored_hash is not None
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    def needs_rehash(self, stored_hash: str) -> bool:
        try:
            return self._hasher.check_needs_rehash(stored_hash)
        except InvalidHashError:
            return True
