"""User passwords: argon2id with configurable parameters and rehash on login (DESIGN 2)."""

from __future__ import annotations

import os

import anyio
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError


class Passwords:
    """argon2id hashing. The async methods run it on worker threads, at most one per core at a
    time: more would only queue for the CPU while each holds its 19 MiB, so memory under a burst of
    logins stays bounded and throughput is what the cores allow."""

    def __init__(self, time_cost: int = 2, memory_cost: int = 19 * 1024, parallelism: int = 1) -> None:
        self._slots: anyio.CapacityLimiter | None = None
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

    def _limiter(self) -> anyio.CapacityLimiter:
        if self._slots is None:
            self._slots = anyio.CapacityLimiter(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
        return self._slots

    async def verify_async(self, stored_hash: str | None, password: str) -> bool:
        return await anyio.to_thread.run_sync(self.verify, stored_hash, password, limiter=self._limiter())

    async def hash_async(self, password: str) -> str:
        return await anyio.to_thread.run_sync(self.hash, password, limiter=self._limiter())
