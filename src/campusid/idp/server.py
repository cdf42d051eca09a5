"""uvicorn's HTTP protocol with one write per response.

uvicorn writes a response's status line and headers when the app sends `http.response.start`,
and its body at `http.response.body`: two `send()` system calls and two TCP segments for every
small JSON answer. Node's http module corks them into one. `CorkedHttpToolsProtocol` does the
same: a response's writes are joined and handed to the socket once, as soon as the response is
complete (writes that do not complete a response, such as a streamed body's parts, go out at the
end of the event-loop turn, and all before the connection closes). Flushing at completion rather
than at the end of the turn matters under load: a turn that runs ten handlers would otherwise hold
the first one's response until the tenth had finished, and responses would leave in bursts.
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
        self.transport.flush()  # the response's last write was just made: send it now
        super().on_response_complete()
