"""Turn-taking between the event loop and the argon2 workers (idp/hash_turns.py): the loop's thread is
SCHED_BATCH exactly while it has a hash pending, and the workers ask for slices long enough for a hash."""

from __future__ import annotations

import asyncio
import os
import platform
import re
import threading

import pytest

from campusid.idp import hash_turns
from campusid.idp.passwords import HashWorkers

linux_policies = pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="scheduling policies are Linux's")


def in_thread(fn):
    """Run fn on a fresh thread (a policy set there cannot leak into the test runner's thread)."""
    out: dict = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as exc:  # re-raised on the test's thread
            out["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join(30)
    if "error" in out:
        raise out["error"]
    return out["value"]


def own_slice_ns() -> int | None:
    """This thread's scheduler slice, from /proc (EEVDF kernels show `se.slice`)."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/sched") as f:
            for line in f:
                if line.startswith("se.slice"):
                    return int(line.split(":")[1])
    except OSError:
        return None
    return None


def custom_slices() -> bool:
    """Linux 6.12+ honours sched_runtime as a fair thread's slice."""
    if platform.system() != "Linux":
        return False
    version = re.match(r"(\d+)\.(\d+)", platform.release())
    return bool(version) and tuple(map(int, version.groups())) >= (6, 12) and own_slice_ns() is not None


@linux_policies
def test_the_thread_is_batch_while_hashes_are_pending_and_ordinary_after():
    def scenario():
        seen = [os.sched_getscheduler(0)]
        with hash_turns.loop_batching():
            seen.append(os.sched_getscheduler(0))
            with hash_turns.loop_batching():  # a second login on the same loop
                seen.append(os.sched_getscheduler(0))
            seen.append(os.sched_getscheduler(0))  # the first is still pending
        seen.append(os.sched_getscheduler(0))
        return seen

    other, batch = os.SCHED_OTHER, os.SCHED_BATCH
    assert in_thread(scenario) == [other, batch, batch, batch, other]


@linux_policies
def test_an_error_inside_still_restores_the_policy():
    def scenario():
        with pytest.raises(ValueError), hash_turns.loop_batching():
            raise ValueError("the hash failed")
        return os.sched_getscheduler(0)

    assert in_thread(scenario) == os.SCHED_OTHER


@linux_policies
def test_a_policy_chosen_by_the_operator_is_left_alone():
    def scenario():
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # as `chrt -b` would
        with hash_turns.loop_batching():
            pass
        return os.sched_getscheduler(0)

    assert in_thread(scenario) == os.SCHED_BATCH  # not switched to SCHED_OTHER behind its back


@pytest.mark.skipif(not custom_slices(), reason="needs EEVDF custom slices (Linux 6.12+)")
def test_a_worker_asks_for_a_slice_of_its_own():
    def scenario():
        before = own_slice_ns()
        ok = hash_turns.worker_slice(7_000_000)
        return before, ok, own_slice_ns()

    before, ok, after = in_thread(scenario)
    assert ok and after == 7_000_000 and before != after


@linux_policies
def test_hash_workers_take_turns_with_the_loop_around_each_hash():
    """Through HashWorkers: the awaiting loop is SCHED_BATCH while its hash runs, ordinary after;
    the hash runs on a thread with the long slice (where the kernel has custom slices)."""
    started, release = threading.Event(), threading.Event()

    def job():
        started.set()
        assert release.wait(10)
        return own_slice_ns()

    async def main():
        workers = HashWorkers(1)
        task = asyncio.ensure_future(workers.run(job))
        assert await asyncio.to_thread(started.wait, 10)
        during = os.sched_getscheduler(0)
        release.set()
        worker_slice = await task
        return during, os.sched_getscheduler(0), worker_slice

    during, after, worker_slice = in_thread(lambda: asyncio.run(main()))
    assert (during, after) == (os.SCHED_BATCH, os.SCHED_OTHER)
    if custom_slices():
        assert worker_slice == hash_turns.HASH_SLICE_NS
