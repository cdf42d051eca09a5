"""Typed exceptions for the bridge's ``error.code`` values (listed in the bridge's OpenAPI document)."""

from __future__ import annotations

from typing import Any


class BridgeError(Exception):
    """A bridge call failed. ``code`` is the envelope's ``error.code``, ``status`` the HTTP status."""

    def __init__(self, code: str, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(f"{code}: {message}" + (f" (HTTP {status})" if status else ""))
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after


class Unauthorized(BridgeError):
    """The bridge token is missing or wrong (check APP_BRIDGE_TOKEN)."""


class ForbiddenOrigin(BridgeError):
    """The request looked like it came from a web page."""


class InsufficientScope(BridgeError):
    """The signed-in session does not grant what this operation needs (grades.read)."""


class NotFound(BridgeError):
    pass


class MethodNotAllowed(BridgeError):
    pass


class LoginTimeout(BridgeError):
    """Nobody finished the browser sign-in in time."""


class LoginInProgress(BridgeError):
    """Another sign-in is waiting for the browser."""


class NotLoggedIn(BridgeError):
    """Nobody is signed in (call ``login()`` first)."""


class PayloadTooLarge(BridgeError):
    pass


class UnsupportedMediaType(BridgeError):
    pass


class BadHost(BridgeError):
    pass


class InvalidRequest(BridgeError):
    pass


class RateLimited(BridgeError):
    """The bridge's throttle or the IdP's login frequency limit; retry after ``retry_after`` seconds."""


class LoginFailed(BridgeError):
    """The identity provider answered the sign-in with an error; start a new one."""


class UpstreamError(BridgeError):
    pass


class UpstreamUnavailable(BridgeError):
    """The identity provider or the records API is unreachable."""


class BridgeUnavailable(BridgeError):
    """Nothing answers at the bridge's address (is campusid-desktop running?)."""


class ProtocolError(BridgeError):
    """The answer was not a bridge envelope."""


ERRORS_BY_CODE: dict[str, type[BridgeError]] = {
    "unauthorized": Unauthorized,
    "forbidden_origin": ForbiddenOrigin,
    "insufficient_scope": InsufficientScope,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "login_timeout": LoginTimeout,
    "login_in_progress": LoginInProgress,
    "not_logged_in": NotLoggedIn,
    "payload_too_large": PayloadTooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "bad_host": BadHost,
    "invalid_request": InvalidRequest,
    "rate_limited": RateLimited,
    "login_failed": LoginFailed,
    "upstream_error": UpstreamError,
    "upstream_unavailable": UpstreamUnavailable,
}


def error_from_envelope(status: int, body: Any, retry_after: float | None) -> BridgeError:
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return ProtocolError("protocol_error", "the bridge answered without an error envelope", status)
    cls = ERRORS_BY_CODE.get(error["code"], BridgeError)
    return cls(error["code"], str(error.get("message", "")), status, retry_after)
