"""Turn-taking between the event loop and the argon2 workers on a shared core (Linux).

A password check is ~20 ms of argon2id working through 19 MiB. On a core that also runs the
event loop, the loop woke for every packet and preempted the hash (~300 times a second in the
benchmark's login row), and each time both found the caches full of the other's data: the loop's
CPU per login grew from 1.5 ms (with a trivial hash) to 4-5 ms, and the hash slowed down too.

So while an event loop has passwords being hashed, its thread is SCHED_BATCH (`loop_batching`:
its wake-ups no longer preempt a running hash) and each worker thread runs with scheduler slices
of HASH_SLICE_NS (`worker_slice`: EEVDF custom slices, Linux 6.12+). The loop then gets the core
when a worker's slice ends or the workers run out of hashes, and handles everything that arrived
meanwhile in one turn. The price: during a burst of logins that keeps every core hashing, other
requests wait up to one slice for the loop (and, with the batched turns below, up to a gap
before it). With no password being hashed nothing changes; where
the kernel or platform lacks one of these calls, that step is skipped. (Yielding the core after
every hash, for shorter waits, measured no better than not taking turns at all.)

Batched turns (`LoopTurns`): even so, the loop took ~45 turns a second during the benchmark's logins,
about one per login, because every wake-up of another process on the core (an idle service's
timer) handed the core to the runnable loop mid-hash, and each turn began with caches the hash had
filled with its 19 MiB. So while logins queue for a hash, an event loop that has run out of work
does not wait for the next packet: it sleeps for up to TURN_GAP_S, or until the hash queue runs
dry, and then handles everything that arrived meanwhile in one turn. It is asleep rather than
runnable, so nothing can hand it the core mid-hash; its turns fell to ~20 a second and its CPU per
login by 0.3-0.4 ms. "Out of work" is an event-loop iteration in which no request data arrived
and no hash result came back (`note_activity` marks those). A database reply (PostgreSQL) that
arrives meanwhile waits for the next turn too, like any other I/O: while logins queue, a request
that needs a round trip to the database may wait up to a gap for it. Those replies batch as well:
on PostgreSQL the loop's turns fell from ~46 to ~20 a second.

The gap is 100 ms, twice the hash slice. Each turn costs the loop a refill of the caches that
19 MiB of argon2id emptied, so the share of the core that logins leave to hashing rises as turns
get rarer. Against 50 ms, in seven alternating pairs of runs of the benchmark's login row on
PostgreSQL (five database round trips per login, each waiting for a turn), the loop's share of the
core fell from 7.7-9.3 % to 7.0-7.5 % and logins rose from 90.4 % to 94.9 % of argon2id alone
(means); on SQLite 7.0 % became 6.3-6.7 % (three pairs). The price, paid only while logins keep
every core hashing: a request outside the logins waits longer for its turn (discovery during the
login row on PostgreSQL: p50 36 -> 63 ms, p99 85 -> 141 ms).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
import threading
from collections.abc import Callable, Iterator

HASH_SLICE_NS = 50_000_000  # two to three argon2id hashes at the default cost (19 MiB, t=2)
TURN_GAP_S = 2 * HASH_SLICE_NS / 1e9  # the longest a loop sleeps between turns (see the module's docstring)

_SCHED_SETATTR = {"x86_64": 314, "aarch64": 274}.get(platform.machine())
_batching = threading.local()


def _set_policy(policy: int) -> bool:
    try:
        os.sched_setscheduler(0, policy, os.sched_param(0))  # 0: the calling thread
        return True
    except (OSError, AttributeError):
        return False


def _other_to_batch() -> bool:
    batch = getattr(os, "SCHED_BATCH", None)
    try:
        if batch is None or os.sched_getscheduler(0) != os.SCHED_OTHER:
            return False
    except OSError:
        return False
    return _set_policy(batch)


@contextlib.contextmanager
def loop_batching() -> Iterator[None]:
    """Around a hash awaited on an event loop: the loop's thread is SCHED_BATCH while it has any
    hash pending, then back to the ordinary policy. A thread an operator set to another policy
    (chrt) is left alone."""
    depth = getattr(_batching, "depth", 0)
    if depth == 0:
        _batching.switched = _other_to_batch()
    _batching.depth = depth + 1
    try:
        yield
    finally:
        _batching.depth -= 1
        if _batching.depth == 0 and _batching.switched:
            _set_policy(os.SCHED_OTHER)
            _batching.switched = False


def worker_slice(slice_ns: int = HASH_SLICE_NS) -> bool:
    """For a hashing thread: ask the scheduler for slices of `slice_ns` (sched_setattr with
    sched_runtime on a SCHED_OTHER thread). False where that is not available."""
    if _SCHED_SETATTR is None or not hasattr(os, "SCHED_OTHER"):
        return False
    # struct sched_attr, version 0 (48 bytes): size, policy, flags, nice, priority, runtime, deadline, period
    attr = ctypes.create_string_buffer(struct.pack("IIQiIQQQ", 48, os.SCHED_OTHER, 0, 0, 0, slice_ns, 0, 0))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall(_SCHED_SETATTR, 0, attr, 0) == 0
    except (OSError, AttributeError):
        return False


# -- batched turns ------------------------------------------------------------------------------
_turns = threading.local()  # each event loop's thread: its LoopTurns


class LoopTurns:
    """One event loop's batched turns while logins queue for a hash (see the module's docstring).

    A callback (`_tick`) runs once per loop iteration while hashes are queued. If the iteration
    before it brought activity (`note_activity`), it only clears the mark; if not, the loop has
    nothing left to do and sleeps until `wake` (the queue ran dry) or TURN_GAP_S. The iteration
    after a sleep counts as busy: it handles what arrived meanwhile, and the continuations that
    handling schedules run before the loop may sleep again. With no hash queued the ticks stop
    and the loop waits for I/O as usual."""

    def __init__(self, loop, gap: float = TURN_GAP_S) -> None:
        self.loop = loop
        self._gap = gap
        self._backlogs: tuple[Callable[[], bool], ...] = ()
        self._wake = threading.Event()
        self._armed = False
        self._busy = False

    def add_backlog(self, backlog: Callable[[], bool]) -> None:
        """`backlog()`: True while hashes wait for a worker (the core is saturated by hashing)."""
        if backlog not in self._backlogs:
            self._backlogs = (*self._backlogs, backlog)

    @property
    def taking_turns(self) -> bool:
        """True from the first hash queued behind busy workers until a turn finds none queued."""
        return self._armed

    def _queued(self) -> bool:
        return any(backlog() for backlog in self._backlogs)

    def activity(self) -> None:
        self._busy = True
        self.arm()

    def arm(self) -> None:
        if not self._armed and self._queued():
            self._armed = True
            self.loop.call_soon(self._tick)

    def wake(self) -> None:
        """From a hashing thread: the queue ran dry, so the loop should feed it now."""
        self._wake.set()

    def _tick(self) -> None:
        if not self._queued():
            self._armed = False
            return
        if self._busy:
            self._busy = False
        else:
            self._wake.clear()
            if self._queued():
                self._wake.wait(self._gap)
                self._busy = True
        self.loop.call_soon(self._tick)


def loop_turns(loop) -> LoopTurns:
    """The LoopTurns of `loop`, the event loop running on this thread."""
    turns = getattr(_turns, "turns", None)
    if turns is None or turns.loop is not loop:
        turns = _turns.turns = LoopTurns(loop)
    return turns


def taking_turns() -> bool:
    """Whether this thread's event loop is taking batched turns (logins queue for a hash)."""
    turns = getattr(_turns, "turns", None)
    return turns is not None and turns.taking_turns


def note_activity() -> None:
    """Request data arrived, or a hash's result came back, on this thread's event loop."""
    turns = getattr(_turns, "turns", None)
    if turns is not None:
        turns.activity()
