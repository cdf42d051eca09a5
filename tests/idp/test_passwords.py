"""Password hashing off the event loop (idp/passwords.py): at most one argon2 hash per thread of
the pool and as many threads as usable cores, the event loop free meanwhile, and an unknown user
costing exactly what a wrong password costs."""

from __future__ import annotations

import asyncio
import threading

import argon2
import pytest

from campusid.idp.passwords import Passwords, usable_cores

FAST = {"time_cost": 1, "memory_cost": 8192}


class Gate:
    """Stands in for argon2's verify: holds its thread until released, recording which threads
    run it and how many at once."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.running = 0
        self.most = 0
        self.threads: list[str] = []
        self.release = threading.Event()
        self.calls = 0

    def verify(self, stored_hash: str, password: str) -> bool:
        with self.cond:
            self.running += 1
            self.calls += 1
            self.most = max(self.most, self.running)
            self.threads.append(threading.current_thread().name)
            self.cond.notify_all()
        assert self.release.wait(10)
        with self.cond:
            self.running -= 1
        return password == "right"

    def wait_running(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.running == count, timeout=10)


def test_the_pool_has_one_thread_per_usable_core_by_default():
    assert Passwords(**FAST).threads == usable_cores() >= 1


@pytest.mark.parametrize("threads", [1, 2])
def test_at_most_one_hash_per_thread_runs_at_once_and_the_loop_stays_free(threads):
    pw = Passwords(**FAST, threads=threads)
    gate = Gate()
    pw._hasher = gate  # the hashing itself is argon2's; what is tested here is how it is run

    async def main():
        logins = [asyncio.ensure_future(pw.verify_async("stored", "right" if n % 2 else "wrong")) for n in range(6)]
        assert await asyncio.to_thread(gate.wait_running, threads)
        ticks = 0
        for _ in range(100):  # the event loop still turns while every hashing thread is busy
            await asyncio.sleep(0)
            ticks += 1
        assert gate.running == threads and gate.calls == threads  # the others wait in the queue
        gate.release.set()
        return ticks, await asyncio.gather(*logins)

    ticks, results = asyncio.run(main())
    assert ticks == 100
    assert results == [False, True] * 3
    assert gate.most == threads and gate.calls == 6
    assert len(set(gate.threads)) <= threads
    pw.close()


def test_a_queued_hash_whose_caller_gave_up_is_never_run():
    pw = Passwords(**FAST, threads=1)
    gate = Gate()
    pw._hasher = gate

    async def main():
        first = asyncio.ensure_future(pw.verify_async("stored", "right"))
        assert await asyncio.to_thread(gate.wait_running, 1)
        queued = asyncio.ensure_future(pw.verify_async("stored", "right"))
        await asyncio.sleep(0)
        queued.cancel()  # the client went away before its hash started
        with pytest.raises(asyncio.CancelledError):
            await queued  # once its cancellation is through, the pool has dropped the job too
        gate.release.set()
        assert await first is True
        return await pw.verify_async("stored", "right")

    assert asyncio.run(main()) is True
    assert gate.calls == 2  # the first and the last; never the cancelled one
    pw.close()


def test_an_error_reaches_its_caller_and_the_pool_goes_on():
    pw = Passwords(**FAST, threads=1)

    class Broken:
        def verify(self, stored_hash, password):
            raise MemoryError("argon2 could not allocate")

    real, pw._hasher = pw._hasher, Broken()

    async def main():
        with pytest.raises(MemoryError):
            await pw.verify_async("stored", "x")
        pw._hasher = real
        return await pw.verify_async(pw.hash("correct horse"), "correct horse")

    assert asyncio.run(main()) is True
    pw.close()


def test_an_unknown_user_costs_one_verification_at_the_same_parameters_as_a_real_hash():
    """No user enumeration by timing: for a user who does not exist the password is verified
    against a dummy hash made with the configured parameters, exactly once, as for a wrong one."""
    pw = Passwords(**FAST)
    stored = pw.hash("correct horse")
    verified: list[str] = []

    class Counting:
        def verify(self, hash_, password):
            verified.append(hash_)
            return real.verify(hash_, password)

    real, pw._hasher = pw._hasher, Counting()
    assert pw.verify(None, "correct horse") is False
    assert pw.verify(stored, "wrong") is False
    assert pw.verify(stored, "correct horse") is True
    assert len(verified) == 3
    unknown, wrong = verified[0], verified[1]
    assert argon2.extract_parameters(unknown) == argon2.extract_parameters(wrong)
    assert unknown != wrong  # the dummy, not some user's hash


def test_verify_async_checks_the_password_and_close_lets_a_new_pool_start():
    pw = Passwords(**FAST)
    stored = pw.hash("correct horse")

    async def main():
        return await asyncio.gather(
            pw.verify_async(stored, "correct horse"), pw.verify_async(stored, "wrong"), pw.verify_async(None, "x")
        )

    assert asyncio.run(main()) == [True, False, False]
    pw.close()  # an app's lifespan ends; it may start again (a test client's does)
    assert asyncio.run(main()) == [True, False, False]
    pw.close()
