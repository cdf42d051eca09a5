"""uvicorn's HTTP protocol with one write per response, and complete responses sent together.

uvicorn writes a response's status line and headers when the app sends `http.response.start`,
and its body at `http.response.body`: two `send()` system calls and two TCP segments for every
small JSON answer. Node's http module corks them into one. `CorkedHttpToolsProtocol` does the
same: a response's writes are joined and handed to the socket once (writes that do not complete a
response, such as a streamed body's parts, go out at the end of the event-loop turn, and all before
the connection closes).

When a complete response is sent depends on what else the worker has in hand:
- No other request in progress (`len(self.tasks) <= 1`: the server's running ASGI tasks, this
  one included): at once. A lone client, or a lightly loaded worker, gets its answer without
  waiting for the rest of the turn.
- Other requests in progress: at the end of the loop turn, with every other response completed in
  it. Each write to a client that is asleep in its own poll wakes it, and on a VM that wake (an
  inter-processor interrupt, so a hypervisor exit) is paid by the sending core; responses that
  leave back to back wake a client once. In the benchmark's token row (c=32, SQLite) the kernel's
  share of the server's CPU fell from 9.3 to 5.0 % in perf (the wake-ups' from 3.1 to 0.4 %),
  the CPU per exchange from 383-409 to 354-374 µs in alternating runs, and the p99 from 24-25 to
  16-17 ms; the c=1 rows did not change, and on PostgreSQL (whose replies spread the handlers'
  completions over more turns) the token row gained ~1 %. Until this change every response was
  flushed the moment it completed.
- While logins queue for a hash (`hash_turns.taking_turns()`), at once: the loop may then sleep
  between batched turns, and a response must not sleep with it.
Nothing else changes: the parser, flow control, keep-alive and timeouts are uvicorn's own.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from campusid.idp import hash_turns


class CorkedTransport:
    """A transport whose writes within one event-loop turn go out as one write."""

    __slots__ = ("_transport", "_loop", "_pending")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(data)

    def flush(self) -> None:
        pending, self._pending = self._pending, []
        if pending and not self._transport.is_closing():
            self._transport.write(pending[0] if len(pending) == 1 else b"".join(pending))

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._pending = []
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(p) for p in self._pending)

    def __getattr__(self, name: str):
        # everything else (is_closing, get_extra_info, pause_reading, …) is the real transport's
        return getattr(self._transport, name)


class CorkedHttpToolsProtocol(HttpToolsProtocol):
    def data_received(self, data: bytes) -> None:
        hash_turns.note_activity()  # while logins queue for a hash, the loop takes batched turns
        super().data_received(data)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(CorkedTransport(transport, self.loop))  # type: ignore[arg-type]

    def on_response_complete(self) -> None:
        # the response's last write was just made: send it now, unless other requests are in
        # progress, whose responses it then leaves with at the end of this turn (see above)
        if len(self.tasks) <= 1 or hash_turns.taking_turns():
            self.transport.flush()
        super().on_response_complete()
