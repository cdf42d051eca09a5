"""The argon2 worker threads (idp/passwords.py): bounded, never idle while jobs wait, errors handed back."""

from __future__ import annotations

import asyncio
import threading

import pytest

from campusid.idp.passwords import HashWorkers, Passwords


class Gate:
    """Jobs that hold their worker until released, counting how many run at once."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.running = 0
        self.most = 0
        self.started: list[int] = []
        self.release = threading.Event()

    def job(self, n: int) -> int:
        with self.cond:
            self.running += 1
            self.most = max(self.most, self.running)
            self.started.append(n)
            self.cond.notify_all()
        assert self.release.wait(10)
        with self.cond:
            self.running -= 1
        return n * n

    def wait_running(self, count: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.running == count, timeout=10)


@pytest.mark.parametrize("size", [1, 2])
def test_at_most_size_jobs_run_at_once_and_every_result_reaches_its_caller(size):
    gate = Gate()
    workers = HashWorkers(size)

    async def main():
        tasks = [asyncio.ensure_future(workers.run(gate.job, n)) for n in range(6)]
        await asyncio.sleep(0)  # let the tasks enqueue their jobs
        assert await asyncio.to_thread(gate.wait_running, size)
        assert len(gate.started) == size  # the others wait in the queue, not on a thread
        gate.release.set()
        return await asyncio.gather(*tasks)

    assert asyncio.run(main()) == [n * n for n in range(6)]
    assert gate.most == size and sorted(gate.started) == list(range(6))


def test_an_error_reaches_the_caller_and_the_worker_goes_on():
    workers = HashWorkers(1)

    def boom():
        raise ValueError("bad hash")

    async def main():
        with pytest.raises(ValueError, match="bad hash"):
            await workers.run(boom)
        return await workers.run(lambda: "next")

    assert asyncio.run(main()) == "next"


def test_a_caller_that_gave_up_does_not_stop_the_worker():
    gate = Gate()
    workers = HashWorkers(1)

    async def main():
        first = asyncio.ensure_future(workers.run(gate.job, 1))
        await asyncio.sleep(0)
        assert await asyncio.to_thread(gate.wait_running, 1)
        first.cancel()
        gate.release.set()
        return await workers.run(gate.job, 3)

    assert asyncio.run(main()) == 9


def test_passwords_verify_async_checks_the_password():
    pw = Passwords(time_cost=1, memory_cost=8192)
    stored = pw.hash("correct horse")

    async def main():
        return await asyncio.gather(
            pw.verify_async(stored, "correct horse"), pw.verify_async(stored, "wrong"), pw.verify_async(None, "x")
        )

    assert asyncio.run(main()) == [True, False, False]
