"""User passwords: argon2id with configurable parameters and rehash on login."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError


def usable_cores() -> int:
    """The CPUs this process may run on (a container's or taskset's limit, not the host's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class Passwords:
    """argon2id hashing. The async methods run it on a pool of one thread per usable core, so a
    login never blocks the event loop, at most one hash per core runs at a time (more would only
    queue for the CPU while each holds its 19 MiB: memory under a burst of logins stays bounded
    and throughput is what the cores allow), and the rest wait in the pool's queue.

    A ThreadPoolExecutor rather than anyio's to_thread with a CapacityLimiter: an executor's
    thread takes the next queued hash itself the moment it finishes one, while a capacity
    limiter hands the next job over only when the event loop gets round to it, so a core would
    idle between hashes whenever the loop is busy with other requests. argon2-cffi releases the
    GIL while it hashes, so the threads hash in parallel with each other and with the loop."""

    def __init__(
        self, time_cost: int = 2, memory_cost: int = 19 * 1024, parallelism: int = 1, *, threads: int | None = None
    ) -> None:
        self._hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_cost, parallelism=parallelism)
        # A hash of a random password, verified when the user does not exist, so an unknown
        # user costs the same time as a wrong password (no user enumeration by timing).
        self._dummy = self._hasher.hash("campusid-dummy-password-for-timing")
        self.threads = threads or usable_cores()
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

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

    async def verify_async(self, stored_hash: str | None, password: str) -> bool:
        return await self._run(self.verify, stored_hash, password)

    async def hash_async(self, password: str) -> str:
        return await self._run(self.hash, password)

    def close(self) -> None:
        """Stop the hashing threads once their current hash is done; hashes still queued are
        dropped. The next async call starts a new pool (an app's lifespan may run again)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        # A caller that goes away (client disconnected) cancels its future: a hash still queued is
        # then never run; one already running finishes and its result is dropped.
        return await asyncio.get_running_loop().run_in_executor(self._executor(), fn, *args)

    def _executor(self) -> ThreadPoolExecutor:
        pool = self._pool
        if pool is None:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="campusid-argon2")
                pool = self._pool
        return pool
