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


# -- batched turns ------------------------------------------------------------------------------
class RecordingEvent:
    """Stands in for LoopTurns' wake-up event: records each sleep instead of sleeping."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.woken = False

    def clear(self) -> None:
        self.woken = False

    def set(self) -> None:
        self.woken = True

    def wait(self, timeout: float) -> bool:
        self.sleeps.append(timeout)
        return self.woken


def recording_turns(loop, queued: dict) -> tuple[hash_turns.LoopTurns, RecordingEvent]:
    turns = hash_turns.LoopTurns(loop, gap=0.25)
    turns.add_backlog(lambda: queued["hashes"])
    event = turns._wake = RecordingEvent()
    return turns, event


def test_a_loop_with_nothing_to_do_sleeps_while_hashes_queue():
    async def main():
        queued = {"hashes": True}
        turns, event = recording_turns(asyncio.get_running_loop(), queued)
        turns._tick()  # an iteration without activity: sleeps
        turns._tick()  # the iteration after the sleep handles what arrived meanwhile
        first = list(event.sleeps)
        turns.activity()  # request data arrived: this iteration's work comes first
        turns._tick()
        after_activity = list(event.sleeps)
        turns._tick()  # and then nothing more
        queued["hashes"] = False
        return first, after_activity, list(event.sleeps)

    first, after_activity, last = asyncio.run(main())
    assert first == [0.25]
    assert after_activity == [0.25]  # no sleep in the iteration that had work
    assert last == [0.25, 0.25]


def test_the_iteration_after_a_sleep_is_busy_and_no_queue_means_no_ticks():
    async def main():
        queued = {"hashes": True}
        turns, event = recording_turns(asyncio.get_running_loop(), queued)
        turns._tick()  # sleeps
        turns._tick()  # what arrived during the sleep is handled: no sleep
        turns._tick()  # nothing more: sleeps again
        sleeps = list(event.sleeps)
        queued["hashes"] = False
        turns._tick()
        disarmed = not turns._armed
        turns.activity()  # with no hash queued, activity does not start the ticks
        return sleeps, disarmed, turns._armed, event.sleeps

    sleeps, disarmed, armed_without_queue, all_sleeps = asyncio.run(main())
    assert sleeps == [0.25, 0.25]
    assert disarmed and not armed_without_queue and all_sleeps == [0.25, 0.25]


def test_the_loop_takes_turns_from_a_queued_hash_until_a_turn_finds_none():
    async def main():
        queued = {"hashes": False}
        turns, _ = recording_turns(asyncio.get_running_loop(), queued)
        idle = turns.taking_turns
        queued["hashes"] = True
        turns.activity()  # request data arrived while a hash waits for a worker
        queued_now = turns.taking_turns
        queued["hashes"] = False
        turns._tick()  # the next turn finds the queue empty
        return idle, queued_now, turns.taking_turns

    assert asyncio.run(main()) == (False, True, False)


def test_each_event_loop_thread_has_its_own_turns_and_activity_marks_only_its_own():
    async def main():
        loop = asyncio.get_running_loop()
        turns = hash_turns.loop_turns(loop)
        same = hash_turns.loop_turns(loop) is turns
        turns._busy = False
        hash_turns.note_activity()
        return turns, same, turns._busy

    first, same, marked = in_thread(lambda: asyncio.run(main()))
    second, _, _ = in_thread(lambda: asyncio.run(main()))
    assert same and marked and first is not second


def test_hash_workers_report_a_backlog_and_wake_the_loop_when_the_queue_runs_dry():
    release = threading.Event()
    started = threading.Event()

    def job(n):
        started.set()
        assert release.wait(10)
        return n

    async def main():
        workers = HashWorkers(1)
        first = asyncio.ensure_future(workers.run(job, 1))
        assert await asyncio.to_thread(started.wait, 10)  # the one worker is busy with it
        second = asyncio.ensure_future(workers.run(job, 2))
        await asyncio.sleep(0)  # enqueued
        backlog_while_queued = workers.backlog()
        turns = hash_turns.loop_turns(asyncio.get_running_loop())
        turns._wake.clear()
        release.set()
        results = [await first, await second]
        return backlog_while_queued, results, workers.backlog(), turns._wake.is_set()

    backlog_while_queued, results, backlog_after, woken = in_thread(lambda: asyncio.run(main()))
    assert backlog_while_queued and results == [1, 2] and not backlog_after
    assert woken  # the worker found the queue empty and woke the loop before handing back the result
