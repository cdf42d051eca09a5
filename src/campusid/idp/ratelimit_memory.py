"""The limiter's one-process counter store: a `limits` storage that is cheap on the hot path.

`limits`' own MemoryStorage keeps each key's moving window as a list, newest first, and inserts
every event at the front (O(n) for a key holding n events); it expires events from a
`threading.Timer` that is started again, 10 ms later, whenever a call finds the last one finished,
and that walks every key under the locks. This store gives the same answers with:

- per key a deque of event timestamps in time order: an event is appended on the right, events
  older than the window are dropped from the left when the key is touched, so a hit is O(1)
  amortised;
- no thread at all: expiry is lazy, and every `SWEEP_EVERY` operations a bounded sweep visits the
  `SWEEP_KEYS` least recently visited keys and drops those with nothing left in their window (it
  visits keys twice as fast as operations can create them, so idle keys do not pile up);
- one lock around everything, held for O(1) amortised work.

Semantics are the library's moving window (limits 5.x MemoryStorage), decision for decision:

- `acquire_entry(key, limit, expiry, amount)`: refused when amount > limit, or when the
  (limit - amount + 1)-th newest event is still in the window (its time >= now - expiry);
  otherwise `amount` events stamped now are added;
- `get_moving_window(key, limit, expiry)`: (time of the oldest event strictly inside the window,
  number of events strictly inside it, i.e. time > now - expiry); with none inside, the time of
  the oldest event still held, or (now, 0) when the key holds none. The library itself counts an
  event at exactly now - expiry as inside when acquiring and outside when counting; that is kept.
  An event is dropped only once it is strictly older than the window (time < now - expiry), which
  can change neither answer. (Where the library's background timer has already dropped events the
  start it returns with a count of 0 depends on that timer's timing; here it does not.)
- the fixed-window counters (`incr`, `decr`, `get`, `get_expiry`) as in the library.

The clock is `self.clock` (default `time.time`), read under the lock so that events are stamped in
the order they are counted; the Limiter hands it its own clock, so tests substitute one clock.
Like the library (whose bisects and timer assume time order), this assumes the clock does not step
back: if it does, events already dropped stay dropped and the ones stamped out of order leave once
the clock passes them again, so the window is at worst briefly more lenient.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from itertools import islice, repeat

from limits.storage import MovingWindowSupport, Storage


class _Events(deque):
    """One key's event timestamps, oldest first, with the longest window they were counted in."""

    __slots__ = ("expiry",)


class WindowMemoryStorage(Storage, MovingWindowSupport):
    """Moving-window (and fixed-window) counters in this process's memory, without threads.

    Not registered under a storage scheme: `storage_from_string("memory://")` stays the library's.
    """

    STORAGE_SCHEME = None
    SWEEP_EVERY = 256  # operations between two sweeps of idle keys
    SWEEP_KEYS = 512  # keys visited per sweep (per kind of counter)

    def __init__(
        self,
        uri: str | None = None,
        wrap_exceptions: bool = False,
        *,
        clock: Callable[[], float] = time.time,
        **options: float | str | bool,
    ) -> None:
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)
        self.clock = clock
        self._lock = threading.Lock()
        self._windows: dict[str, _Events] = {}
        self._counters: dict[str, list] = {}  # key -> [count, expires_at]
        self._ops = 0

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ValueError

    # -- moving window ---------------------------------------------------------------------------
    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        with self._lock:
            now = self.clock()
            self._ops += 1
            if self._ops >= self.SWEEP_EVERY:
                self._sweep(now)
            events = self._windows.get(key)
            if events is None:
                events = self._windows[key] = _Events()
                events.expiry = expiry
            elif expiry > events.expiry:
                events.expiry = expiry
            cutoff = now - events.expiry
            while events and events[0] < cutoff:
                events.popleft()
            held = len(events)
            nth = limit - amount  # index, newest first, of the event that must have left the window
            if nth < held and events[held - 1 - nth] >= now - expiry:
                return False
            if amount == 1:
                events.append(now)
            else:
                events.extend(repeat(now, amount))
            return True

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        with self._lock:
            now = self.clock()
            events = self._windows.get(key)
            if events is None:
                return now, 0
            cutoff = now - events.expiry
            while events and events[0] < cutoff:
                events.popleft()
            if not events:
                del self._windows[key]
                return now, 0
            start = now - expiry
            held = len(events)
            outside = 0  # events at (or, with a shorter expiry than stored, before) the window start
            while outside < held and events[outside] <= start:
                outside += 1
            if outside == held:
                return events[0], 0
            return events[outside], held - outside

    # -- fixed window ----------------------------------------------------------------------------
    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        with self._lock:
            now = self.clock()
            self._ops += 1
            if self._ops >= self.SWEEP_EVERY:
                self._sweep(now)
            counter = self._live_counter(key, now)
            if counter is None:
                counter = self._counters[key] = [0, now]
            counter[0] += amount
            if counter[0] == amount:
                counter[1] = now + expiry
            return counter[0]

    def decr(self, key: str, amount: int = 1) -> int:
        with self._lock:
            counter = self._live_counter(key, self.clock())
            if counter is None:
                return 0  # the library stores a 0 that expires at once: the same as nothing
            counter[0] = max(counter[0] - amount, 0)
            return counter[0]

    def get(self, key: str) -> int:
        with self._lock:
            counter = self._live_counter(key, self.clock())
            return 0 if counter is None else counter[0]

    def get_expiry(self, key: str) -> float:
        with self._lock:
            counter = self._counters.get(key)
            return self.clock() if counter is None else counter[1]

    def _live_counter(self, key: str, now: float) -> list | None:
        counter = self._counters.get(key)
        if counter is not None and counter[1] <= now:
            del self._counters[key]
            return None
        return counter

    # -- the rest of the interface ----------------------------------------------------------------
    def clear(self, key: str) -> None:
        with self._lock:
            self._windows.pop(key, None)
            self._counters.pop(key, None)

    def reset(self) -> int | None:
        with self._lock:
            held = max(len(self._counters), len(self._windows))
            self._counters.clear()
            self._windows.clear()
            return held

    def check(self) -> bool:
        return True

    # -- idle keys --------------------------------------------------------------------------------
    def _sweep(self, now: float) -> None:
        """Visit the SWEEP_KEYS least recently visited keys of each kind: drop the ones with
        nothing left to count, move the others to the back of the queue. Called under the lock."""
        self._ops = 0
        windows = self._windows
        for key, events in list(islice(windows.items(), self.SWEEP_KEYS)):
            del windows[key]
            if events and events[-1] >= now - events.expiry:
                windows[key] = events
        counters = self._counters
        for key, counter in list(islice(counters.items(), self.SWEEP_KEYS)):
            del counters[key]
            if counter[1] > now:
                counters[key] = counter
