"""The limiter's memory storage (ratelimit_memory.WindowMemoryStorage) against `limits`' own.

The reference is the library's MemoryStorage with its background expiry timer switched off, under
the same controlled clock. Two references: `raw` never drops an event; `pruned` drops, before each
operation, the events strictly older than their window (time < now - expiry), which is exactly
what ours drops. Decisions and counts must match both; the window start must match `pruned`
always and `raw` whenever the window holds an event (with an empty window the library returns the
oldest event it still holds, which for `raw` depends on the whole history and for the real thing
on when its timer last ran).
"""

from __future__ import annotations

import hashlib
import hmac
import pickle
import sys
import threading
from unittest import mock

import limits.storage.memory
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from limits import parse
from limits.errors import StorageError
from limits.storage import MemoryStorage, storage_from_string
from limits.strategies import MovingWindowRateLimiter

from campusid.idp.ratelimit import Limiter, Limits
from campusid.idp.ratelimit_memory import WindowMemoryStorage

BASE = 1_763_851_863.25  # a realistic time whose sums with small integers stay exact


class FakeClock:
    def __init__(self, now: float = BASE) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def reference() -> MemoryStorage:
    """The library's MemoryStorage with no timer: nothing happens between calls."""
    ref = MemoryStorage()
    ref.timer.cancel()
    ref._MemoryStorage__schedule_expiry = lambda: None  # the name its methods call
    return ref


def prune(ref: MemoryStorage, now: float, expiries: dict[str, int]) -> None:
    for key, events in list(ref.events.items()):
        ref.events[key] = [e for e in events if e.atime >= now - expiries[key]]


# moving-window keys each carry their own limit (as limits' key_for makes them): name, limit, expiry
WINDOW_KEYS = {"a/1/1": (1, 1), "b/3/2": (3, 2), "c/5/10": (5, 10), "d/2/3": (2, 3)}
COUNTER_KEYS = ["x", "y"]

steps = st.one_of(
    st.just(0.0),
    st.integers(0, 4).map(float),
    st.sampled_from([0.1, 0.25, 0.5, 0.999, 1.001, 10.0]),
    st.floats(0, 3, allow_nan=False),
)
operations = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(sorted(WINDOW_KEYS)), st.integers(0, 6)),
    st.tuples(st.just("window"), st.sampled_from(sorted(WINDOW_KEYS)), st.just(0)),
    st.tuples(st.just("incr"), st.sampled_from(COUNTER_KEYS), st.integers(1, 3)),
    st.tuples(st.just("decr"), st.sampled_from(COUNTER_KEYS), st.integers(1, 3)),
    st.tuples(st.just("count"), st.sampled_from(COUNTER_KEYS), st.just(0)),
    st.tuples(st.just("clear"), st.sampled_from(sorted(WINDOW_KEYS) + COUNTER_KEYS), st.just(0)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(steps, operations), min_size=10, max_size=120), st.sampled_from([(256, 512), (1, 1), (3, 2)]))
def test_same_answers_as_the_librarys_memory_storage(script, sweeping):
    clock = FakeClock()
    raw, pruned = reference(), reference()
    ours = WindowMemoryStorage(clock=clock.time)
    ours.SWEEP_EVERY, ours.SWEEP_KEYS = sweeping  # sweeps after every operation, too
    expiries = {key: expiry for key, (_, expiry) in WINDOW_KEYS.items()}
    with mock.patch.object(limits.storage.memory, "time", clock):
        for step, (op, key, amount) in script:
            clock.now += step
            prune(pruned, clock.now, expiries)
            if op == "acquire":
                limit, expiry = WINDOW_KEYS[key]
                got = ours.acquire_entry(key, limit, expiry, amount)
                assert (
                    got
                    == raw.acquire_entry(key, limit, expiry, amount)
                    == pruned.acquire_entry(key, limit, expiry, amount)
                ), (op, key, amount)
            elif op == "window":
                limit, expiry = WINDOW_KEYS[key]
                start, count = ours.get_moving_window(key, limit, expiry)
                raw_start, raw_count = raw.get_moving_window(key, limit, expiry)
                assert (start, count) == pruned.get_moving_window(key, limit, expiry)
                assert count == raw_count
                if count:
                    assert start == raw_start
            elif op == "incr":
                assert ours.incr(key, 5, amount) == raw.incr(key, 5, amount)
            elif op == "decr":
                assert ours.decr(key, amount) == raw.decr(key, amount)
            elif op == "count":  # get first: both drop an expired counter there
                assert (ours.get(key), ours.get_expiry(key)) == (raw.get(key), raw.get_expiry(key))
            else:
                for storage in (ours, raw, pruned):
                    storage.clear(key)
        # and every window through the library's strategy, at the end
        for key, (limit, expiry) in WINDOW_KEYS.items():
            item = parse(f"{limit}/{expiry} seconds")
            mine = MovingWindowRateLimiter(ours).get_window_stats(item, key)
            theirs = MovingWindowRateLimiter(pruned).get_window_stats(item, key)
            assert mine == theirs


def test_an_event_at_the_exact_window_start_still_refuses_but_is_not_counted():
    """The library's own edge, kept: acquiring sees it inside the window, counting outside."""
    clock = FakeClock()
    ours = WindowMemoryStorage(clock=clock.time)
    assert ours.acquire_entry("k", 1, 10)
    clock.now += 10
    assert not ours.acquire_entry("k", 1, 10)
    assert ours.get_moving_window("k", 1, 10) == (BASE, 0)  # Retry-After: about now, not 10 s
    clock.now += 0.5
    assert ours.acquire_entry("k", 1, 10)
    assert ours.get_moving_window("k", 1, 10) == (BASE + 10.5, 1)


def test_the_sweep_drops_only_keys_with_nothing_left_in_their_window():
    clock = FakeClock()
    ours = WindowMemoryStorage(clock=clock.time)
    ours.SWEEP_EVERY, ours.SWEEP_KEYS = 1, 10  # a sweep at every operation
    assert ours.acquire_entry("edge", 1, 10) and ours.acquire_entry("gone", 1, 5)
    assert ours.acquire_entry("half", 1, 4)
    clock.now += 10  # "edge" is exactly one window old: the library still refuses on it
    assert ours.acquire_entry("other", 1, 1)  # sweeps
    assert set(ours._windows) == {"edge", "other"}
    assert not ours.acquire_entry("edge", 1, 10)
    clock.now += 0.5
    assert ours.acquire_entry("other", 5, 1)  # sweeps
    assert set(ours._windows) == {"other"}
    assert ours.acquire_entry("edge", 1, 10)


def test_a_hit_is_appended_not_inserted_and_old_events_leave_from_the_front():
    clock = FakeClock()
    ours = WindowMemoryStorage(clock=clock.time)
    stamps = []
    for _ in range(5000):  # all within half a second
        assert ours.acquire_entry("k", 1_000_000, 1)
        stamps.append(clock.now)
        clock.now += 0.0001
    events = ours._windows["k"]
    assert list(events) == stamps
    clock.now += 0.75  # about the first half of those events is now more than a second old
    assert ours.acquire_entry("k", 1_000_000, 1)
    kept = [t for t in stamps if t >= clock.now - 1] + [clock.now]
    assert ours._windows["k"] is events and list(events) == kept and 2400 < len(kept) < 2600
    assert ours.get_moving_window("k", 1_000_000, 1) == (kept[0], len(kept))


def test_no_thread_is_ever_started(monkeypatch):
    started = []
    real_start = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", lambda self: (started.append(self), real_start(self))[1])
    # the counting works: the library's storage starts its timer thread
    timer = storage_from_string("memory://").timer
    timer.cancel()
    timer.join()
    assert started
    started.clear()

    before = threading.active_count()
    item = parse("1000000/second")
    limiter = Limiter(Limits(item, item, item, item), storage_uri="memory://", secret_key="k" * 40, issuer="http://x")
    for i in range(20_000):
        limiter.token_request(f"client-{i % 300}")
        limiter.completed_login(f"user-{i % 50}", "client")
    assert started == []
    assert threading.active_count() == before


def test_idle_keys_are_swept_and_live_ones_kept():
    clock = FakeClock()
    ours = WindowMemoryStorage(clock=clock.time)
    for i in range(5000):
        assert ours.acquire_entry(f"idle-{i}", 10, 1)
        ours.incr(f"idle-counter-{i}", 1)
    assert ours.acquire_entry("live", 10, 3600)
    ours.incr("live-counter", 3600)
    clock.now += 2
    for _ in range(30 * ours.SWEEP_EVERY):  # enough sweeps to visit every key
        ours.acquire_entry("busy", 1_000_000, 1)
        clock.now += 0.0001
    assert set(ours._windows) == {"live", "busy"}
    assert set(ours._counters) == {"live-counter"}
    assert ours.get_moving_window("live", 10, 3600) == (BASE, 1)
    assert ours.get("live-counter") == 1


def test_memory_stays_bounded_when_every_hit_is_a_new_key():
    clock = FakeClock()
    ours = WindowMemoryStorage(clock=clock.time)
    held = []
    for i in range(50_000):
        ours.acquire_entry(f"k{i}", 5, 1)
        clock.now += 0.01  # about 100 keys live in a one-second window at any time
        held.append(len(ours._windows))
    assert max(held[10_000:]) < 100 + 3 * ours.SWEEP_KEYS


def _threads_hitting_one_key() -> tuple[WindowMemoryStorage, int, list[Exception]]:
    """8 threads, 200 hits each on one key (limit 500) and on keys of their own that expire and
    get swept while the others run."""
    shared, own = parse("500/hour"), parse("2/second")
    storage = WindowMemoryStorage()
    storage.SWEEP_EVERY, storage.SWEEP_KEYS = 2, 8
    window = MovingWindowRateLimiter(storage)
    allowed, errors = [], []
    barrier = threading.Barrier(8)

    def worker(n: int) -> None:
        try:
            barrier.wait()
            got = 0
            for i in range(200):
                got += window.hit(shared, "one-key")
                window.hit(own, f"own-{n}-{i % 16}")
            allowed.append(got)
        except Exception as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return storage, sum(allowed), errors


def test_threads_hitting_one_key_get_exactly_the_limit():
    """A smoke test: a race shows in a few percent of the rounds, so there are twenty of them,
    with the interpreter switching threads as often as it can."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(20):
            storage, allowed, errors = _threads_hitting_one_key()
            assert errors == [] and allowed == 500
            key = parse("500/hour").key_for("one-key")
            assert storage.get_moving_window(key, 500, 3600)[1] == 500
            assert list(storage._windows[key]) == sorted(storage._windows[key])
    finally:
        sys.setswitchinterval(old)


def test_errors_are_wrapped_as_the_library_does():
    def broken() -> float:
        raise ValueError("clock")

    with pytest.raises(StorageError):
        WindowMemoryStorage(wrap_exceptions=True, clock=broken).acquire_entry("k", 1, 1)
    with pytest.raises(ValueError):
        WindowMemoryStorage(clock=broken).get_moving_window("k", 1, 1)


def test_interface_odds_and_ends():
    clock = FakeClock()
    ours = WindowMemoryStorage(clock=clock.time)
    assert ours.check()
    assert not ours.acquire_entry("k", 2, 10, amount=3)  # more than the limit: refused, nothing held
    assert ours.get_moving_window("k", 2, 10) == (BASE, 0)
    assert ours.acquire_entry("k", 2, 10, amount=2)
    assert ours.get_moving_window("k", 2, 10) == (BASE, 2)
    assert ours.incr("c", 10) == 1
    assert ours.get_expiry("c") == BASE + 10
    assert ours.reset() == 1 and ours.get_moving_window("k", 2, 10) == (BASE, 0) and ours.get("c") == 0

    plain = WindowMemoryStorage()
    plain.acquire_entry("k", 3, 60)
    copy = pickle.loads(pickle.dumps(plain))
    assert copy.get_moving_window("k", 3, 60)[1] == 1
    assert copy.acquire_entry("k", 3, 60)


# -- the limiter ------------------------------------------------------------------------------
def _limiter(**kw) -> Limiter:
    item = parse("5/minute")
    return Limiter(
        Limits(item, item, item, item), storage_uri="memory://", secret_key="s" * 40, issuer="http://x", **kw
    )


def test_the_limiter_uses_this_storage_in_memory_mode_and_its_clock_follows():
    clock, later = FakeClock(), FakeClock(BASE + 100)
    limiter = _limiter(clock=clock.time)
    assert isinstance(limiter.storage, WindowMemoryStorage)
    assert limiter.storage.clock == clock.time
    limiter.clock = later.time
    assert limiter.storage.clock == later.time
    for _ in range(5):
        assert limiter.completed_login("u", "c") is None
    later.now += 12
    assert limiter.completed_login("u", "c") == 60 - 12


def test_derived_keys_are_cached_bounded_and_still_hmacs():
    limiter = _limiter()

    def uncached(kind: str, value: str) -> tuple[str, str]:
        digest = hmac.new(limiter._key, f"{kind}\x00{value}".encode(), hashlib.sha256).hexdigest()[:32]
        return (f"{limiter.namespace}:{kind}", digest)

    first = limiter._id("account", "alice")
    assert first == uncached("account", "alice") and limiter._id("account", "alice") is first
    assert "alice" not in "".join(first)
    assert limiter._id("ip", "alice") == uncached("ip", "alice") != first
    for i in range(10_000):
        assert limiter._id("token", f"client-{i}") == uncached("token", f"client-{i}")
        assert len(limiter._ids) <= 4096
    long = "x" * 10_000
    assert limiter._id("account", long) == uncached("account", long)
    assert ("account", long) not in limiter._ids
