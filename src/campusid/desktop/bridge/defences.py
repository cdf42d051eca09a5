"""The bridge's defences, run in this order, so that the first failing one gives the answer:
Host, Origin, route and method, size and media type, token.

Each check is one function that raises :class:`BridgeError`; :class:`BridgeGuard` runs them in
order in front of the handlers and replays the (already read, size-checked) body to them.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.datastructures import Headers

from .envelope import BridgeError, fail
from .lockout import TokenLockout
from .operations import Auth, Operation, operations_at

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_BEARER = re.compile(r"Bearer ([A-Za-z0-9\-._~+/]+=*)", re.IGNORECASE)  # RFC 6750 2.1 b64token
_CROSS_SITE_FETCH = {"cross-site", "same-site"}
_DRAIN_LIMIT = 4 * 1024 * 1024  # read (and drop) this much of an oversized body so the 413 reaches the client
WWW_AUTHENTICATE = 'Bearer realm="campusid-bridge"'


def check_host(headers: Headers, port: int) -> None:
    """DNS rebinding: Host must be exactly 127.0.0.1:PORT or localhost:PORT, on every route."""
    hosts = headers.getlist("host")
    if len(hosts) != 1 or hosts[0].lower() not in (f"127.0.0.1:{port}", f"localhost:{port}"):
        raise BridgeError("bad_host", f"this bridge answers only to Host 127.0.0.1:{port} or localhost:{port}")


def check_origin(headers: Headers) -> None:
    """No web page may call the bridge: any Origin (``null`` included) or cross/same-site fetch is refused."""
    if "origin" in headers:
        raise BridgeError("forbidden_origin", "requests from web pages (with an Origin header) are refused")
    if headers.get("sec-fetch-site", "").lower() in _CROSS_SITE_FETCH:
        raise BridgeError("forbidden_origin", "cross-site requests are refused")


def check_route_and_method(path: str, method: str) -> Operation:
    found = operations_at(path)
    if not found:
        raise BridgeError("not_found", "no such operation")
    if method not in found:
        allow = ", ".join(sorted(found))
        raise BridgeError("method_not_allowed", f"use {allow} on {path}", headers={"Allow": allow})
    return found[method]


async def read_body(receive: Receive, headers: Headers, limit: int) -> bytes:
    """The request body, at most ``limit`` bytes (413 beyond it, whatever Content-Length claims)."""
    declared = headers.get("content-length")
    too_large = BridgeError("payload_too_large", f"request bodies are limited to {limit // 1024} KiB")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        await _drain(receive)
        raise too_large
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            if message.get("more_body", False):
                await _drain(receive)
            raise too_large
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _drain(receive: Receive) -> None:
    total = 0
    while total < _DRAIN_LIMIT:
        message = await receive()
        total += len(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body", False):
            return


def check_media_type(headers: Headers, body: bytes) -> None:
    if not body:
        return
    media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise BridgeError("unsupported_media_type", "request bodies must be JSON (Content-Type: application/json)")


def check_token(headers: Headers, operation: Operation, token: str, lockout: TokenLockout) -> None:
    """Bearer token from the Authorization header only, compared in constant time, with a lockout."""
    if operation.auth is Auth.NONE:
        return
    retry_after = lockout.retry_after()
    if retry_after is not None:
        raise BridgeError("rate_limited", "too many failed token checks; wait", retry_after=retry_after)
    values = headers.getlist("authorization")
    match = _BEARER.fullmatch(values[0]) if len(values) == 1 else None
    presented = match.group(1).encode("ascii") if match else b""
    if match and hmac.compare_digest(presented, token.encode("ascii")):
        return
    lockout.record_failure()
    challenge = WWW_AUTHENTICATE + (', error="invalid_token"' if values else "")
    raise BridgeError(
        "unauthorized",
        "send the bridge token as 'Authorization: Bearer <APP_BRIDGE_TOKEN>'",
        headers={"WWW-Authenticate": challenge},
    )


class BridgeGuard:
    """ASGI middleware running every check before a handler sees the request."""

    def __init__(self, app: ASGIApp, *, token: str, port: int, max_body: int, lockout: TokenLockout) -> None:
        self.app = app
        self._token = token
        self._port = port
        self._max_body = max_body
        self._lockout = lockout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            check_host(headers, self._port)
            check_origin(headers)
            operation = check_route_and_method(scope["path"], scope["method"])
            body = await read_body(receive, headers, self._max_body)
            check_media_type(headers, body)
            check_token(headers, operation, self._token, self._lockout)
        except BridgeError as refusal:
            await fail(refusal)(scope, receive, send)
            return
        scope.setdefault("state", {})["operation"] = operation
        await self.app(scope, _replay(body, receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """Hand the handler the body already read, then the real channel (which reports a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
