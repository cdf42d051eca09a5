"""The outermost request layer: the request id, the request's figure and its log line.

Every response carries `X-Request-ID`. It is the request's own header only when the request came
through a trusted proxy (CAMPUSID_TRUSTED_PROXIES), which set it, and only when it is one sane
short token (REQUEST_ID_PATTERN); otherwise, and always for anyone else, a fresh random id.
The id is in idp/logs.REQUEST_ID while the request is served, so each line logged meanwhile
carries it. When the request has been answered, and /metrics is on (idp/metrics.py `Figures`),
its duration goes to the `campusid_http_request_duration_seconds` histogram (route template,
method, status: never the raw path) and, with request lines on (CAMPUSID_LOG_FORMAT=json), one
line is logged.
"""

from __future__ import annotations

import logging
import os
import re
import time

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from campusid.idp import metrics
from campusid.idp.error_layer import route_template
from campusid.idp.logs import ACCESS_LOGGER, REQUEST_ID
from campusid.idp.ratelimit import trusted_peer

access_log = logging.getLogger(ACCESS_LOGGER)
REQUEST_ID_PATTERN = re.compile(rb"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
HEADER = b"x-request-id"
CLIENT_KEY = "campusid.client_id"


def note_client(request: Request, client_id: str) -> None:
    """The authenticated client of this request, for its log line."""
    request.scope[CLIENT_KEY] = client_id


def new_request_id() -> str:
    return os.urandom(16).hex()


def request_id(scope: Scope, trusted_proxies: tuple) -> str:
    """The proxy's id when a trusted proxy sent exactly one sane one, else a new one."""
    if trusted_proxies and trusted_peer(scope, trusted_proxies):
        given = [value for name, value in scope.get("headers", ()) if name == HEADER]
        if len(given) == 1 and REQUEST_ID_PATTERN.fullmatch(given[0]):
            return given[0].decode("ascii")
    return new_request_id()


class RequestLayer:
    """ASGI middleware around the whole app (see the module's docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        trusted_proxies: tuple = (),
        prefix: str = "",
        request_lines: bool = False,
        figures: metrics.Figures = metrics.OFF,
    ) -> None:
        self.app = app
        self.figures = figures
        self.trusted_proxies = trusted_proxies
        self.prefix = prefix
        self.request_lines = request_lines

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        rid = request_id(scope, self.trusted_proxies)
        header = (HEADER, rid.encode("ascii"))
        status = 500  # what the server answers when nothing was sent

        async def stamped(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        token = REQUEST_ID.set(rid)
        try:
            await self.app(scope, receive, stamped)
        finally:
            self._answered(scope, status, time.perf_counter() - started)
            REQUEST_ID.reset(token)

    def _answered(self, scope: Scope, status: int, seconds: float) -> None:
        if not (self.figures.on or self.request_lines):
            return
        route = route_template(scope, self.prefix)
        route = metrics.UNMATCHED if route == "-" else route
        method = metrics.method_label(scope.get("method", ""))
        self.figures.observe_request(route, method, status, seconds)
        if self.request_lines:
            access_log.info(
                "request",
                extra={
                    "method": method,
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 2),
                    "client_id": scope.get(CLIENT_KEY),
                },
            )
