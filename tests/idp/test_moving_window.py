"""The moving-window counters (idp/moving_window.py), in memory and in Redis, held to the same
answers; and the limiter's conduct when its counters cannot be reached (idp/ratelimit.py)."""

from __future__ import annotations

import asyncio
import logging
import os
import uuid

import pytest
from limits import parse
from starlette.requests import Request

from campusid.idp.moving_window import CountersUnavailable, MemoryWindows, RedisWindows
from campusid.idp.ratelimit import Limiter, Limits

REDIS_URL = os.environ.get("CAMPUSID_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
T0 = 1_800_000_000.25  # any time: the caller's clock is all the counters know


def _redis_or_skip() -> None:
    redis = pytest.importorskip("redis")
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError:
        pytest.skip(f"no Redis at {REDIS_URL}")


@pytest.fixture(params=["memory", "redis"])
def windows(request):
    if request.param == "memory":
        yield MemoryWindows()
        return
    _redis_or_skip()
    yield RedisWindows(REDIS_URL)
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match="campusid-test:*"):
        client.delete(key)


def key() -> str:
    return f"campusid-test:{uuid.uuid4().hex}"


def run(coro):
    return asyncio.run(coro)


def test_an_event_counts_for_exactly_one_window_after_it_happened(windows):
    async def scenario():
        k = key()
        answers = [await windows.hit(k, 3, 60, T0 + i) for i in range(3)]  # events at T0, T0+1, T0+2
        assert answers == [None, None, None]
        assert await windows.hit(k, 3, 60, T0 + 10) == T0 + 60  # full: the oldest stops counting at T0+60
        assert await windows.blocked(k, 3, 60, T0 + 59.999) == T0 + 60
        assert await windows.blocked(k, 3, 60, T0 + 60) is None  # T0's event no longer counts
        assert await windows.hit(k, 3, 60, T0 + 60) is None  # so there is room for one
        assert await windows.hit(k, 3, 60, T0 + 60.5) == T0 + 61

    run(scenario())


def test_a_refused_hit_is_not_counted(windows):
    async def scenario():
        k = key()
        assert await windows.hit(k, 1, 10, T0) is None
        for i in range(5):
            assert await windows.hit(k, 1, 10, T0 + 1 + i) == T0 + 10
        assert await windows.hit(k, 1, 10, T0 + 10) is None  # the refusals did not extend the window

    run(scenario())


def test_blocked_counts_nothing(windows):
    async def scenario():
        k = key()
        for _ in range(10):
            assert await windows.blocked(k, 2, 10, T0) is None
        assert await windows.hit(k, 2, 10, T0) is None
        assert await windows.hit(k, 2, 10, T0) is None  # two events at the same instant both count
        assert await windows.blocked(k, 2, 10, T0) == T0 + 10
        assert await windows.hit(k, 2, 10, T0) == T0 + 10

    run(scenario())


def test_keys_and_windows_are_counted_apart(windows):
    async def scenario():
        a, b = key(), key()
        assert await windows.hit(a, 1, 60, T0) is None
        assert await windows.hit(b, 1, 60, T0) is None
        assert await windows.hit(a, 1, 60, T0 + 1) == T0 + 60

    run(scenario())


def test_memory_keys_with_nothing_left_to_count_are_dropped():
    """No timer and no thread, yet idle keys do not pile up: later hits drop them."""
    windows = MemoryWindows()

    async def scenario():
        for i in range(1000):
            await windows.hit(f"ip:{i}", 30, 900, T0 + i / 1000)
        await windows.hit("token:client", 600, 60, T0 + 1)
        assert await windows.hit("ip:late", 30, 900, T0 + 901) is None
        return windows._keys[900]

    assert list(run(scenario())) == ["ip:late"]


def test_an_unreachable_redis_raises_counters_unavailable():
    windows = RedisWindows("redis://127.0.0.1:1/0")  # nothing listens there
    with pytest.raises(CountersUnavailable, match="ConnectionError"):
        run(windows.hit(key(), 5, 60, T0))


# -- the limiter when its counters are unreachable ---------------------------------------------
class Switchable(MemoryWindows):
    """Memory counters that can be made unreachable, counting how often they were asked."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False
        self.asked = 0

    async def hit(self, *args):
        self.asked += 1
        if self.down:
            raise CountersUnavailable("ConnectionError: refused")
        return await super().hit(*args)

    async def blocked(self, *args):
        self.asked += 1
        if self.down:
            raise CountersUnavailable("ConnectionError: refused")
        return await super().blocked(*args)


def limiter(windows) -> Limiter:
    limits = Limits(parse("5/15 minutes"), parse("30/15 minutes"), parse("30/hour"), parse("600/minute"))
    return Limiter(limits, windows=windows, secret_key="k" * 40, issuer="https://idp.example.edu")


def test_an_outage_fails_passwords_closed_codes_and_tokens_open_and_is_logged_once(caplog):
    windows = Switchable()
    lim = limiter(windows)
    lim.probe_every = 3600  # within this test, an outage is never probed again (see recovery below)
    request = Request(
        {"type": "http", "client": ("198.51.100.7", 1), "headers": [], "method": "POST", "path": "/login"}
    )

    async def scenario():
        assert await lim.before_password("alice", request) is None
        windows.down = True
        refusals = [await lim.before_password("alice", request) for _ in range(20)]
        assert {(r.status, r.retry_after) for r in refusals} == {(503, 10)}
        assert "temporarily unavailable" in refusals[0].message and "try again" in refusals[0].message
        assert (await lim.after_password("alice", request, False)).status == 503  # a failure not counted
        assert await lim.after_password("alice", request, True) is None
        assert await lim.completed_login("u1", "client") is None  # fails open
        await lim.token_request("client")  # fails open: no SlowDown
        return windows.asked

    with caplog.at_level(logging.DEBUG, logger="campusid"):
        asked = run(scenario())
    # asked once when it went down, then left alone until `probe_every` has passed
    assert asked == 2 + 1
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "unreachable" in messages[0] and not caplog.records[0].exc_info

    caplog.clear()

    async def recovery():
        lim.probe_every = 0  # try the counters again at every request
        assert (await lim.before_password("alice", request)).status == 503
        windows.down = False
        assert await lim.before_password("alice", request) is None

    with caplog.at_level(logging.DEBUG, logger="campusid"):
        run(recovery())
    assert [r.getMessage().split(" after")[0] for r in caplog.records] == ["rate-limit counters reachable again"]
