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
requests wait up to one slice for the loop. With no password being hashed nothing changes; where
the kernel or platform lacks one of these calls, that step is skipped. (Yielding the core after
every hash, for shorter waits, measured no better than not taking turns at all.)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import struct
import threading
from collections.abc import Iterator

HASH_SLICE_NS = 50_000_000  # two to three argon2id hashes at the default cost (19 MiB, t=2)

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
