"""What the sync and async clients share: request shapes, timeouts, envelope parsing, Retry-After."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import httpx

from .errors import (
    BridgeError,
    BridgeUnavailable,
    LoginTimeout,
    NotLoggedIn,
    ProtocolError,
    RateLimited,
    error_from_envelope,
)
from .models import LoginResult, parse_time

DEFAULT_BASE_URL = "http://127.0.0.1:4399"
DEFAULT_TIMEOUT = 10.0
SYNC_TIMEOUT = 60.0
DEFAULT_LOGIN_TIMEOUT = 300.0
LOGIN_MARGIN = 30.0  # the bridge answers a login shortly after its own timeout


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    json: dict[str, Any] | None = None
    read_timeout: float = DEFAULT_TIMEOUT


def resolve_token(token: str | None) -> str | None:
    return token if token is not None else os.environ.get("APP_BRIDGE_TOKEN")


def headers(token: str | None) -> dict[str, str]:
    result = {"Accept": "application/json", "User-Agent": "campusid-bridge-client"}
    if token:
        result["Authorization"] = f"Bearer {token}"
    return result


DEVICE_START_TIMEOUT = 45.0  # the bridge answers a device login once the IdP gave a code (30 s at most)
DEVICE_WAIT = 660.0  # a device code lives 10 minutes at campusid; a little more than that
STATUS_POLL = 2.0


def login_call(force: bool, timeout: float | None, wait: bool, method: str = "browser") -> Call:
    body: dict[str, Any] = {"force": force, "wait": wait}
    if timeout is not None:
        body["timeout"] = timeout
    if method != "browser":
        body["method"] = method
        return Call("POST", "/login", body, read_timeout=DEVICE_START_TIMEOUT)
    waits_for = (timeout if timeout is not None else DEFAULT_LOGIN_TIMEOUT) if wait else 0.0
    return Call("POST", "/login", body, read_timeout=max(DEFAULT_TIMEOUT, waits_for + LOGIN_MARGIN))


def login_outcome(status: dict[str, Any]) -> LoginResult | None:
    """From a /status answer: the session once a pending sign-in has finished, None while it is
    still pending; the typed error when it failed (denied, expired, refused)."""
    if status.get("login_pending"):
        return None
    failed = status.get("last_login_error")
    if isinstance(failed, dict):
        raise error_from_envelope(502, {"error": failed}, None)
    if status.get("state") == "signed_in":
        user = status.get("user") or {}
        return LoginResult(user.get("name"), parse_time(status.get("expires_at")), reused=False)
    raise NotLoggedIn("not_logged_in", "no sign-in is pending and nobody is signed in")


def waited_too_long() -> LoginTimeout:
    return LoginTimeout("login_timeout", "the sign-in did not finish in time (checked by this client)")


def httpx_timeout(call: Call) -> httpx.Timeout:
    return httpx.Timeout(DEFAULT_TIMEOUT, read=call.read_timeout)


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return float(value)
    except ValueError:
        return None


def unwrap(response: httpx.Response) -> Any:
    """``data`` of a successful envelope, or the typed :class:`BridgeError` for its ``error.code``."""
    try:
        body = response.json()
    except ValueError:
        raise ProtocolError(
            "protocol_error", "the bridge answered something that is not JSON", response.status_code
        ) from None
    if response.is_success and isinstance(body, dict) and body.get("success") is True:
        return body.get("data")
    raise error_from_envelope(response.status_code, body, retry_after(response))


def unreachable(base_url: str, exc: Exception) -> BridgeError:
    return BridgeUnavailable(
        "bridge_unavailable",
        f"no bridge answers at {base_url} ({type(exc).__name__}); is 'campusid-desktop --headless' running?",
    )


def should_retry(error: BridgeError, attempt: int, retries: int, max_wait: float) -> float | None:
    """Seconds to wait before retrying a rate-limited call, or ``None`` to give up."""
    if not isinstance(error, RateLimited) or attempt >= retries:
        return None
    wait = error.retry_after if error.retry_after is not None else 1.0
    return wait if wait <= max_wait else None
