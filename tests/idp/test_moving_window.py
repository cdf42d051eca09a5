"""The moving-window counters (idp/moving_window.py), in memory and in Redis, held to the same
answers; and the limiter's conduct when its counters cannot be reached (idp/ratelimit.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
import uuid

import pytest
from limits import parse
from starlette.requests import Request

from campusid.idp.moving_window import CountersUnavailable, MemoryWindows, RedisWindows
from campusid.idp.ratelimit import Limiter, Limits
from tests.conftest import REDIS_URL

T0 = 1_800_000_000.25  # any time: the caller's clock is all the counters know


@pytest.fixture(params=["memory", "redis"])
def windows(request):
    if request.param == "memory":
        yield MemoryWindows()
        return
    client = request.getfixturevalue("redis_client")  # skips where no Redis answers
    yield RedisWindows(REDIS_URL)
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
    # a port this test holds without listening, so connecting is refused (on a shared machine
    # something may listen on any fixed port, port 1 included)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        windows = RedisWindows(f"redis://127.0.0.1:{held.getsockname()[1]}/0")
        with pytest.raises(CountersUnavailable, match="ConnectionError") as refused:
            run(windows.hit(key(), 5, 60, T0))
    assert not refused.value.timed_out  # refused at once: nothing was waited for


def test_a_redis_that_does_not_answer_times_out_once_and_says_so():
    """A listener that takes connections and never answers: the attempt times out, is not
    repeated (only a broken connection is retried), and the error says it was a timeout."""
    pytest.importorskip("redis")
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(16)
    hung.settimeout(0.1)
    accepted, stop = [], threading.Event()

    def accept():
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(hung.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        windows = RedisWindows(f"redis://127.0.0.1:{hung.getsockname()[1]}/0")
        windows.TIMEOUTS = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}
        with pytest.raises(CountersUnavailable, match="Timeout") as no_answer:
            run(windows.hit(key(), 5, 60, T0))
        assert no_answer.value.timed_out
        assert len(accepted) == 1  # one connection, one wait: a timeout is not tried twice
    finally:
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        hung.close()


# -- Redis gone and back -------------------------------------------------------------------------
@pytest.fixture
def own_redis():
    """A redis-server of this test's own (tests/services.py), so stopping it harms nobody."""
    pytest.importorskip("redis")
    from tests.services import Redis

    server = Redis()
    yield server
    server.stop()


async def _answering_ping(server) -> None:
    """Until `server` answers PING (and no longer: what follows must work at once)."""
    import redis

    client = redis.Redis(port=server.port, socket_connect_timeout=1, socket_timeout=1)
    try:
        for _ in range(3000):
            try:
                if client.ping():
                    return
            except redis.RedisError:
                await asyncio.sleep(0.01)
        raise AssertionError(f"Redis on {server.port} does not answer PING")
    finally:
        client.close()


def _clients(server) -> int:
    import redis

    with redis.Redis(port=server.port) as client:
        return len(client.client_list()) - 1  # not this one


def test_counters_work_at_once_when_the_same_redis_comes_back(own_redis):
    """Redis stopped and started again on the same port, empty (no data, no loaded script), while
    one event loop holds the counters (as a worker does: it sees Redis close its connections).
    Four pooled connections; during the outage one of them is tried (and fails), three sit idle
    and dead; once Redis answers PING, four hits at once are all counted, on fresh connections."""
    windows = RedisWindows(own_redis.url)
    k = key()

    async def scenario():
        assert await asyncio.gather(*(windows.hit(k, 5, 60, T0 + i) for i in range(4))) == [None] * 4
        assert _clients(own_redis) == 4
        await asyncio.to_thread(own_redis.stop)
        await asyncio.sleep(0.2)  # the loop reads each connection's end, as a serving worker's would
        with pytest.raises(CountersUnavailable) as down:
            await windows.hit(k, 5, 60, T0 + 10)
        assert not down.value.timed_out  # refused at once
        await asyncio.to_thread(own_redis.start)
        await _answering_ping(own_redis)
        hits = await asyncio.gather(*(windows.hit(k, 5, 60, T0 + 20 + i) for i in range(4)), return_exceptions=True)
        assert hits == [None] * 4, hits
        # the Redis that came back is empty: these four are all the key holds, so one more fits
        assert await windows.blocked(k, 5, 60, T0 + 30) is None
        assert await windows.hit(k, 5, 60, T0 + 30) is None
        assert await windows.hit(k, 5, 60, T0 + 31) == T0 + 20 + 60
        assert await windows.ping() is None
        await windows.close()

    run(scenario())


def test_the_same_event_sent_twice_is_answered_as_the_first_time(own_redis, monkeypatch):
    """What the retry after a broken connection sends when Redis had run the script but its answer
    was lost: the same event (the same member), counted once, and not refused for the place it
    took itself."""
    windows = RedisWindows(own_redis.url)
    monkeypatch.setattr("campusid.idp.moving_window.os.urandom", lambda n: b"\x01" * n)

    async def scenario():
        k = key()
        assert await windows.hit(k, 1, 60, T0) is None
        assert await windows.hit(k, 1, 60, T0) is None  # sent again: already counted, as answered
        assert await windows.blocked(k, 1, 60, T0) == T0 + 60  # and counted once: the one place is taken
        assert await windows.hit(k, 1, 60, T0 + 1) == T0 + 60  # another event is refused
        await windows.close()

    run(scenario())


# -- the limiter when its counters are unreachable ---------------------------------------------
class Switchable(MemoryWindows):
    """Memory counters that can be made unreachable, counting how often they were asked: refusing
    at once (Redis stopped), or `timed_out` (a Redis that does not answer)."""

    def __init__(self, timed_out: bool = False) -> None:
        super().__init__()
        self.down = False
        self.timed_out = timed_out
        self.asked = 0

    def _fail(self):
        if self.timed_out:
            raise CountersUnavailable("TimeoutError: Timeout reading from socket", timed_out=True)
        raise CountersUnavailable("ConnectionError: refused")

    async def hit(self, *args):
        self.asked += 1
        if self.down:
            self._fail()
        return await super().hit(*args)

    async def blocked(self, *args):
        self.asked += 1
        if self.down:
            self._fail()
        return await super().blocked(*args)


def limiter(windows) -> Limiter:
    limits = Limits(parse("5/15 minutes"), parse("30/15 minutes"), parse("30/hour"), parse("600/minute"))
    return Limiter(limits, windows=windows, secret_key="k" * 40, issuer="https://idp.example.edu")


def test_an_outage_fails_passwords_closed_codes_and_tokens_open_and_is_logged_once(caplog):
    windows = Switchable(timed_out=True)  # each attempt would wait for Redis to time out
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


def test_counters_that_refuse_at_once_are_asked_at_every_request_and_the_first_after_is_served(caplog):
    """Redis stopped or restarting refuses at once, so not asking spares no one a wait: every
    request asks, passwords still fail closed and tokens open, and the first sign-in once the
    counters answer again is counted and let through, however recent the last refusal."""
    windows = Switchable()
    lim = limiter(windows)
    lim.probe_every = 3600  # a remembered refusal would outlast the outage by an hour
    request = Request(
        {"type": "http", "client": ("198.51.100.7", 1), "headers": [], "method": "POST", "path": "/login"}
    )

    async def scenario():
        assert await lim.before_password("alice", request) is None  # asks twice: IP, then account
        windows.down = True
        for _ in range(5):
            refusal = await lim.before_password("alice", request)  # asks once: the IP's hit fails
            assert (refusal.status, refusal.retry_after) == (503, 10)
        await lim.token_request("client")  # fails open
        windows.down = False
        assert await lim.before_password("alice", request) is None
        assert await lim.completed_login("u1", "client") is None
        return windows.asked

    with caplog.at_level(logging.DEBUG, logger="campusid"):
        asked = run(scenario())
    assert asked == 2 + 5 + 1 + 2 + 1
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and "unreachable" in messages[0] and "reachable again" in messages[1], messages
