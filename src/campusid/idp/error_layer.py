"""The one place where an exception that escaped a handler becomes an answer.

An unexpected exception is logged once (method and route template: never the raw path, query or
body) and answered 500; `StoreUnavailable` (the database cannot be reached) is answered 503 with
`Retry-After` and logged as one line, and while it goes on, at most one more line every
`StoreOutageLog.EVERY` seconds. Nothing is raised on to the server: an exception that reaches
uvicorn after a response has started makes it close the connection, so a keep-alive client's
next request on that connection would fail too, although its answer had been sent in full.
(Starlette's ServerErrorMiddleware re-raises after answering; this layer sits inside it, so
nothing reaches it.) If the response had already started when the exception came, the answer is
incomplete and there is nothing to send: the error is logged and the server closes that
connection, as it must.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from campusid.idp.store.errors import StoreUnavailable

log = logging.getLogger("campusid.idp")

# (scope, exception) -> the answer; `exception` is StoreUnavailable or any other Exception
Answer = Callable[[Scope, Exception], Awaitable[Response]]


def route_template(scope: Scope, prefix: str = "") -> str:
    """The matched route's path template (`/api/v1/apps/{client_id}`), below `prefix` (the
    issuer's path); '-' before routing matched anything. Never the raw path: it may carry
    identifiers, and a log line or a metric label must not."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path is None:
        return "-"
    template = scope.get("root_path", "") + path  # a mount's routes are relative to it
    return template[len(prefix) :] if prefix and template.startswith(prefix) else template


class StoreOutageLog:
    """One line when the database becomes unreachable, then at most one line every EVERY seconds
    (with how many requests were answered 503 meanwhile) while it stays so."""

    EVERY = 10.0

    def __init__(self, logger: logging.Logger) -> None:
        self._log = logger
        self._next = 0.0
        self._unlogged = 0

    def note(self, exc: StoreUnavailable, method: str, route: str) -> None:
        now = time.monotonic()
        if now < self._next:
            self._unlogged += 1
            return
        more = f" ({self._unlogged} more answered 503 since the last line)" if self._unlogged else ""
        self._log.warning("database unavailable on %s %s, answered 503: %s%s", method, route, exc, more)
        self._next = now + self.EVERY
        self._unlogged = 0


class ErrorLayer:
    """ASGI middleware: runs `app`, turns what escapes it into `answer`'s response (see the
    module's docstring). `prefix`: the issuer's path, left out of logged route templates;
    `outage`: shared by the layers of one app, so that an outage is one burst in the log."""

    def __init__(self, app: ASGIApp, *, answer: Answer, prefix: str = "", outage: StoreOutageLog | None = None) -> None:
        self.app = app
        self.answer = answer
        self.prefix = prefix
        self.outage = outage or StoreOutageLog(log)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:  # the last place that can answer: nothing goes on to the server
            await self._failed(scope, receive, send, exc, started)

    async def _failed(self, scope: Scope, receive: Receive, send: Send, exc: Exception, started: bool) -> None:
        method, route = scope.get("method", "-"), route_template(scope, self.prefix)
        if isinstance(exc, StoreUnavailable):
            self.outage.note(exc, method, route)
        elif started:
            log.error("unhandled error on %s %s after the response started", method, route, exc_info=exc)
        else:
            log.error("unhandled error on %s %s", method, route, exc_info=exc)
        if started:
            return
        try:
            response = await self.answer(scope, exc)
        except Exception:  # rendering the answer failed too: the plainest one there is
            log.exception("could not render the error answer on %s %s", method, route)
            response = PlainTextResponse("Server error", 500, headers={"Cache-Control": "no-store"})
        try:
            await response(scope, receive, send)
        except Exception:  # the client went away meanwhile: nobody to answer
            log.debug("could not send the error answer on %s %s", method, route, exc_info=True)
