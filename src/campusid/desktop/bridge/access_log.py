"""The access log: method, path (never the query string), status, duration. No headers, no bodies.

It also reports each call to the core's event bus so a GUI can list recent bridge calls.
"""

from __future__ import annotations

import logging
import time

from ..core import events as ev
from .defences import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("campusid.desktop.bridge.access")


class AccessLog:
    def __init__(self, app: ASGIApp, events: ev.EventBus) -> None:
        self.app = app
        self.events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        logged = False

        def note(status: int) -> None:
            nonlocal logged
            logged = True
            duration_ms = round((time.perf_counter() - started) * 1000, 1)
            path = scope.get("path", "")
            log.info("%s %s %s %.1fms", scope.get("method"), path, status, duration_ms)
            self.events.emit(
                ev.BRIDGE_CALL, method=scope.get("method"), path=path, status=status, duration_ms=duration_ms
            )

        async def send_and_note(message: Message) -> None:
            # Logged before the response leaves, so a client that has its answer finds the line written.
            if message["type"] == "http.response.start":
                note(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            if not logged:
                note(500)
