"""User passwords: argon2id with configurable parameters and rehash on login (DESIGN 2)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from campusid.idp import hash_turns


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


class HashWorkers:
    """One thread per usable core, each taking the next hash from a queue as soon as it has
    finished one. The event loop only enqueues and is handed the result: a worker never waits for
    the loop to dispatch its next job, so the core does not idle between hashes while the loop is
    busy with other requests (anyio's to_thread with a capacity limiter did wait). The loop and
    the workers take turns on a shared core rather than preempting each other, and while hashes
    queue the loop takes its turns in batches (hash_turns; `backlog` tells it when)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._turns: tuple[hash_turns.LoopTurns, ...] = ()  # the loops that awaited a hash here
        self._started = False
        self._lock = threading.Lock()

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        if not self._started:
            self._start()
        loop = asyncio.get_running_loop()
        turns = hash_turns.loop_turns(loop)
        if turns not in self._turns:
            turns.add_backlog(self.backlog)
            self._turns = (*self._turns, turns)
        future = loop.create_future()
        self._jobs.put((fn, args, loop, future))
        turns.arm()
        with hash_turns.loop_batching():
            return await future

    def backlog(self) -> bool:
        """True while hashes wait for a worker: every worker is busy and more are queued."""
        return not self._jobs.empty()

    def _start(self) -> None:
        with self._lock:
            if not self._started:
                for n in range(self._size):
                    threading.Thread(target=self._work, name=f"campusid-argon2-{n}", daemon=True).start()
                self._started = True

    def _work(self) -> None:
        hash_turns.worker_slice()
        while True:
            fn, args, loop, future = self._jobs.get()
            if future.cancelled():
                continue
            try:
                result, error = fn(*args), None
            except BaseException as exc:  # handed to the awaiting request
                result, error = None, exc
            if self._jobs.empty():  # before the result: a loop asleep between turns must feed the queue now
                for turns in self._turns:
                    turns.wake()
            # RuntimeError: that event loop has closed meanwhile, so nobody is waiting
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    hash_turns.note_activity()
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class Passwords:
    """argon2id hashing. The async methods run it on worker threads, at most one per core at a
    time: more would only queue for the CPU while each holds its 19 MiB, so memory under a burst of
    logins stays bounded and throughput is what the cores allow."""

    def __init__(self, time_cost: int = 2, memory_cost: int = 19 * 1024, parallelism: int = 1) -> None:
        self._workers = HashWorkers(usable_cores())
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

    async def verify_async(self, stored_hash: str | None, password: str) -> bool:
        return await self._workers.run(self.verify, stored_hash, password)

    async def hash_async(self, password: str) -> str:
        return await self._workers.run(self.hash, password)
