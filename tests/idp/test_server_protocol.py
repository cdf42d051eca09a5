"""The served HTTP protocol: uvicorn's, with a response's writes joined into one, sent at once when
it is the worker's only request and with the turn's other responses otherwise (idp/server.py)."""

from __future__ import annotations

import asyncio

from uvicorn.config import Config
from uvicorn.server import ServerState

from campusid.idp import hash_turns
from campusid.idp.server import CorkedHttpToolsProtocol, CorkedTransport


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False
        self.aborted = False

    def write(self, data: bytes) -> None:
        assert not self.closed, "write after close"
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str, default=None):
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def _serving(
    app, state: ServerState | None = None, raw: FakeTransport | None = None
) -> tuple[CorkedHttpToolsProtocol, FakeTransport]:
    """A connection served by the protocol (on `state`, a server's shared state), on `raw`."""
    config = Config(app=app, http=CorkedHttpToolsProtocol, log_level="warning", access_log=False)
    config.load()
    protocol = CorkedHttpToolsProtocol(config=config, server_state=state or ServerState(), app_state={})
    raw = raw or FakeTransport()
    protocol.connection_made(raw)  # type: ignore[arg-type]
    return protocol, raw


async def _turn() -> None:
    await asyncio.sleep(0)  # let the loop run the callbacks already scheduled (one turn)


def test_writes_within_one_loop_turn_become_one_write_in_order():
    async def main():
        raw = FakeTransport()
        t = CorkedTransport(raw, asyncio.get_running_loop())
        t.write(b"HTTP/1.1 200 OK\r\n\r\n")
        t.write(b"{}")
        assert raw.writes == []  # nothing yet: still the same turn
        assert t.get_write_buffer_size() == len(b"HTTP/1.1 200 OK\r\n\r\n{}")
        await _turn()
        assert raw.writes == [b"HTTP/1.1 200 OK\r\n\r\n{}"]
        t.write(b"next")
        await _turn()
        assert raw.writes[-1] == b"next" and len(raw.writes) == 2

    asyncio.run(main())


def test_close_sends_what_is_pending_first_and_abort_drops_it():
    async def main():
        raw = FakeTransport()
        t = CorkedTransport(raw, asyncio.get_running_loop())
        t.write(b"last words")
        t.close()
        assert raw.writes == [b"last words"] and raw.closed
        await _turn()  # the scheduled flush finds nothing left and writes nothing after close
        assert raw.writes == [b"last words"]

        raw2 = FakeTransport()
        t2 = CorkedTransport(raw2, asyncio.get_running_loop())
        t2.write(b"never")
        t2.abort()
        await _turn()
        assert raw2.writes == [] and raw2.aborted

    asyncio.run(main())


def test_a_served_response_leaves_in_one_write_with_headers_and_body():
    async def app(scope, receive, send):
        assert scope["type"] == "http"
        await receive()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"11")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"ok":true}'})

    async def main():
        protocol, raw = _serving(app)
        protocol.data_received(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n")
        for _ in range(5):
            await _turn()
        assert len(raw.writes) == 1, raw.writes
        head, _, body = raw.writes[0].partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and b"content-type: application/json" in head
        assert body == b'{"ok":true}'
        protocol.connection_lost(None)

    asyncio.run(main())


def test_a_lone_request_s_response_is_sent_at_once_not_at_the_end_of_the_loop_turn():
    """A worker with one request in hand answers it without waiting for the rest of the turn."""
    seen_after_send: list[int] = []
    raw = FakeTransport()

    async def app(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        seen_after_send.append(len(raw.writes))  # headers alone: still held back
        await send({"type": "http.response.body", "body": b"{}"})
        seen_after_send.append(len(raw.writes))  # same task step, same turn: already written

    async def main():
        protocol, _ = _serving(app, raw=raw)
        protocol.data_received(b"GET /x HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n")
        for _ in range(5):
            await _turn()
        protocol.connection_lost(None)

    asyncio.run(main())
    assert seen_after_send[:2] == [0, 1]
    assert len(raw.writes) == 1 and raw.writes[0].endswith(b"\r\n\r\n{}")


def _two_requests(taking_turns: bool, monkeypatch) -> tuple[list[int], list[int], FakeTransport, FakeTransport]:
    """A fast request completes while a slow one (another connection) is still in progress; then the
    slow one completes alone. Returns how many writes each connection had made right after its
    response's last send, and the connections' transports."""
    monkeypatch.setattr(hash_turns, "taking_turns", lambda: taking_turns)
    release = asyncio.Event()
    seen_fast: list[int] = []
    seen_slow: list[int] = []
    raws: dict[str, FakeTransport] = {}

    async def app(scope, receive, send):
        await receive()
        if scope["path"] == "/slow":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})
        (seen_slow if scope["path"] == "/slow" else seen_fast).append(len(raws[scope["path"]].writes))

    async def main():
        state = ServerState()
        slow, raws["/slow"] = _serving(app, state)
        fast, raws["/fast"] = _serving(app, state)
        slow.data_received(b"GET /slow HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n")
        await _turn()
        fast.data_received(b"GET /fast HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n\r\n")
        for _ in range(5):
            await _turn()
        assert len(state.tasks) == 1  # the fast request is done, the slow one still waits
        release.set()
        for _ in range(5):
            await _turn()
        slow.connection_lost(None)
        fast.connection_lost(None)

    asyncio.run(main())
    return seen_fast, seen_slow, raws["/fast"], raws["/slow"]


def test_with_other_requests_in_progress_a_response_leaves_with_the_turn_s_others(monkeypatch):
    """Complete responses written back to back wake a sleeping client once, not once each."""
    seen_fast, seen_slow, fast, slow = _two_requests(False, monkeypatch)
    assert seen_fast == [0]  # complete, but the slow request was in progress: held for the turn's end
    assert len(fast.writes) == 1 and fast.writes[0].endswith(b"\r\n\r\n{}")  # whole, in one write
    assert seen_slow == [1]  # alone by then: sent at once
    assert len(slow.writes) == 1 and slow.writes[0].endswith(b"\r\n\r\n{}")


def test_while_logins_queue_for_a_hash_a_response_is_sent_at_once(monkeypatch):
    """The loop may sleep between batched turns then; a held response would sleep with it."""
    seen_fast, seen_slow, fast, slow = _two_requests(True, monkeypatch)
    assert seen_fast == [1] and seen_slow == [1]
    assert len(fast.writes) == 1 and len(slow.writes) == 1
