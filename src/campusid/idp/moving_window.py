"""Moving-window counters for the login frequency limit: one small interface, kept in this
process's memory or in Redis (shared by several workers).

A moving window of `limit` events per `window` seconds: an event counts for exactly one window
after it happened (from `t` until just before `t + window`), and an event is counted only while
fewer than `limit` others count. `hit` counts one and `blocked` asks without counting; both
answer None when the event is (or would be) allowed, else the time at which the oldest counted
event stops counting, so the caller can say when to retry. The caller passes the time (`now`),
so one clock drives both stores and tests control it without touching either.

Why not `limits`' own storages (the rate strings are still parsed by `limits`): its asyncio
memory storage re-spawns an expiry task that hands every key to a worker thread, measured at
30-50 us of CPU per hit at the token endpoint's rate (8-14 % of a token exchange), against
~2 us here; its threaded memory storage inserts every event at the front of a list and runs a
timer thread that walks every key under locks a hundred times a second.
"""

from __future__ import annotations

import asyncio
import os
from bisect import bisect_right
from collections import OrderedDict, deque
from typing import Protocol


class CountersUnavailable(RuntimeError):
    """The counter store cannot be reached (Redis down, timed out). `timed_out`: the attempt
    waited for an answer that never came (a hung Redis, a host that does not answer), rather than
    being refused at once (Redis stopped or restarting), so trying again costs a wait."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class MovingWindows(Protocol):
    async def hit(self, key: str, limit: int, window: float, now: float) -> float | None:
        """Count one event at `now` unless `limit` events already count; None when counted,
        else when the oldest counted event stops counting."""

    async def blocked(self, key: str, limit: int, window: float, now: float) -> float | None:
        """What `hit` would answer, without counting anything."""

    async def close(self) -> None: ...


class MemoryWindows:
    """Counters in this process. Per window length, an ordered dict of key -> event times (oldest
    first); a hit moves its key to the end, so keys stay in order of their newest event and
    those with nothing left to count are dropped from the front as later hits pass by: O(1)
    amortised per hit, no thread, no timer. (If the system clock steps back, a key may be kept
    a little longer than needed; no answer changes.)"""

    def __init__(self) -> None:
        self._keys: dict[float, OrderedDict[str, deque[float]]] = {}

    async def hit(self, key: str, limit: int, window: float, now: float) -> float | None:
        keys = self._keys.get(window)
        if keys is None:
            keys = self._keys[window] = OrderedDict()
        start = now - window
        events = keys.get(key)
        if events is None:
            events = deque()
        else:
            while events and events[0] <= start:
                events.popleft()
        if len(events) >= limit:
            return events[0] + window if events else now + window
        events.append(now)
        keys[key] = events
        keys.move_to_end(key)
        while True:  # drop the keys whose newest event no longer counts (this one's does)
            first, its_events = next(iter(keys.items()))
            if its_events[-1] > start:
                break
            del keys[first]
        return None

    async def blocked(self, key: str, limit: int, window: float, now: float) -> float | None:
        events = self._keys.get(window, {}).get(key, ())
        first = bisect_right(events, now - window)  # events[first:] still count
        if len(events) - first < limit:
            return None
        return events[first] + window if first < len(events) else now + window

    async def close(self) -> None:
        pass


# One sorted set per key, scored by event time. KEYS[1]: the key; ARGV: now, window, limit,
# a member unique to this event, whether to count it (1) or only ask (0). Returns the time at
# which the oldest counted event stops counting as a string (Lua numbers lose digits), or false.
# The same event sent twice (a retry after a connection broke before its answer was read) is
# answered as the first time: already counted, so not refused for the place it took itself.
_HIT = """
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if ARGV[5] == '1' and redis.call('ZSCORE', KEYS[1], ARGV[4]) then
  return false
end
if redis.call('ZCARD', KEYS[1]) >= limit then
  return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
end
if ARGV[5] == '1' then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000))
end
return false
"""


class RedisWindows:
    """Counters in Redis, shared by every worker using the same URL, through redis-py's asyncio
    client (no blocking call on the event loop). Each answer is one round trip running one Lua
    script, so concurrent workers cannot both take the last place in a window. Keys expire a
    window after their last event.

    When Redis goes away and comes back (restarted, failed over, CLIENT KILL, an idle timeout), the
    pool still holds the connections Redis closed and lends them out: redis-py 8.1 does not check
    a connection for the server's close when lending it (its default for maintenance
    notifications skips that check: redis-py #4252, fixed in 8.2), and no such check sees a
    connection dropped without a close or closed while the command is on its way. The command is
    then answered "Connection closed by server", and connections made by `from_url` are not
    retried. Hence one retry, at once, on ConnectionError: the connection is opened again and the
    same command sent (the script loaded again if that Redis lost it; the script answers a
    repeated event as the first time), so the first request after Redis is back is counted,
    whichever worker has it. A timeout is not retried, so a Redis that does not answer is waited
    for once; and no request pays a round trip to check its connection beforehand (no
    health_check_interval)."""

    # An unreachable Redis must answer quickly: a login waits for it (and is refused), a token
    # request waits for it (and is served uncounted).
    TIMEOUTS = {"socket_connect_timeout": 2, "socket_timeout": 2}

    def __init__(self, url: str) -> None:
        self._url = url
        self._client = None
        self._script = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _redis(self):
        # A client's connections belong to the event loop that opened them: a server has one
        # loop, but an app driven by a test client may be called on a new loop per request.
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
            from redis.exceptions import ConnectionError as BrokenConnection

            retry = Retry(NoBackoff(), 1, supported_errors=(BrokenConnection,))
            self._client = Redis.from_url(self._url, retry=retry, **self.TIMEOUTS)
            self._script = self._client.register_script(_HIT)
            self._loop = loop
        return self._script

    async def _run(self, key: str, limit: int, window: float, now: float, count: bool) -> float | None:
        from redis.exceptions import RedisError

        # two events at the same instant both count; a retry of this one sends the same member
        member = f"{now!r}:{os.urandom(6).hex()}"
        try:
            answer = await self._redis()(keys=[key], args=[repr(now), repr(window), limit, member, int(count)])
        except (RedisError, OSError) as exc:
            raise _unavailable(exc) from None
        return None if answer is None else float(answer) + window

    async def hit(self, key: str, limit: int, window: float, now: float) -> float | None:
        return await self._run(key, limit, window, now, True)

    async def blocked(self, key: str, limit: int, window: float, now: float) -> float | None:
        return await self._run(key, limit, window, now, False)

    async def ping(self) -> None:
        """One round trip to Redis (the readiness check); CountersUnavailable when it fails."""
        from redis.exceptions import RedisError

        self._redis()
        try:
            await self._client.ping()
        except (RedisError, OSError) as exc:
            raise _unavailable(exc) from None

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()


def _unavailable(exc: Exception) -> CountersUnavailable:
    from redis.exceptions import TimeoutError as NoAnswer

    # redis-py raises its own TimeoutError for socket_timeout and socket_connect_timeout; the
    # built-in one (socket.timeout, asyncio's) may come from below it.
    timed_out = isinstance(exc, (NoAnswer, TimeoutError))
    return CountersUnavailable(f"{type(exc).__name__}: {exc}", timed_out=timed_out)
