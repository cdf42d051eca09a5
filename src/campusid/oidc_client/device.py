"""The device authorization grant (RFC 8628) for clients without a browser, as pure functions.

A bot on a server, an SSH session or a lab machine asks the provider for a device code and a user
code (section 3.1), shows the person the verification URI and the user code (3.3), and polls the
token endpoint (3.4) until the person has allowed or denied it on another device, keeping the
polling interval (and adding 5 seconds at every ``slow_down``, 3.5) and stopping when the code
expires. The sync and async clients drive the same flow (:mod:`._core`); this module builds the
requests and reads the answers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx

from .errors import TokenEndpointError
from .tokens import token_endpoint_error

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
DEFAULT_INTERVAL = 5  # RFC 8628 3.2: "If no value is provided, clients MUST use 5 as the default."
SLOW_DOWN_STEP = 5  # RFC 8628 3.5
MAX_BACKOFF = 60  # seconds between polls at most while the provider is unreachable (3.5 back-off)


@dataclass(frozen=True)
class DeviceAuthorization:
    """What to show the person (RFC 8628 3.2, 3.3): open ``verification_uri`` on a phone or
    computer and enter ``user_code`` before ``expires_at``. ``verification_uri_complete``, when
    the provider sends one, carries the code already (for a QR code or a link). The device code
    itself stays inside (``repr`` never shows it)."""

    verification_uri: str
    user_code: str
    expires_at: datetime
    interval: int
    verification_uri_complete: str | None = None
    scope: str | None = None
    device_code: str = field(default="", repr=False)

    def message(self) -> str:
        """One line to print or send to the person."""
        when = self.expires_at.astimezone(UTC).strftime("%H:%M UTC")
        return f"To sign in, open {self.verification_uri} and enter the code {self.user_code} (before {when})."


@dataclass(frozen=True)
class Wait:
    """A pause the flow asks its driver for (seconds), before the next poll."""

    seconds: float


@dataclass(frozen=True)
class ShowCode:
    """The flow asks its driver to show the code to the person (the caller's callback)."""

    authorization: DeviceAuthorization


def device_authorization_form(scope: str) -> dict[str, str]:
    """RFC 8628 3.1; the client authenticates as at the token endpoint (Basic, or client_id)."""
    return {"scope": scope}


def device_token_form(device_code: str) -> dict[str, str]:
    """RFC 8628 3.4."""
    return {"grant_type": GRANT_TYPE, "device_code": device_code}


def _url(doc: dict[str, Any], name: str, required: bool) -> str | None:
    value = doc.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).netloc:
        raise TokenEndpointError("invalid_response", f"device authorization response {name} is not a URL")
    return value


def parse_device_authorization_response(
    response: httpx.Response, *, now: datetime, sent_secrets: Iterable[str] = ()
) -> DeviceAuthorization:
    """RFC 8628 3.2 (success) or RFC 6749 5.2 (error, raised as TokenEndpointError)."""
    if response.status_code != 200:
        raise token_endpoint_error(response, sent_secrets)
    try:
        doc = response.json()
    except ValueError:
        doc = None
    if not isinstance(doc, dict):
        raise TokenEndpointError("invalid_response", "device authorization response is not a JSON object", 200)
    device_code, user_code, expires_in = doc.get("device_code"), doc.get("user_code"), doc.get("expires_in")
    if not isinstance(device_code, str) or not device_code or not isinstance(user_code, str) or not user_code:
        raise TokenEndpointError("invalid_response", "device authorization response lacks a code", 200)
    if isinstance(expires_in, bool) or not isinstance(expires_in, int | float) or expires_in <= 0:
        raise TokenEndpointError("invalid_response", "device authorization response lacks expires_in", 200)
    interval = doc.get("interval", DEFAULT_INTERVAL)
    if isinstance(interval, bool) or not isinstance(interval, int | float) or interval < 1:
        interval = DEFAULT_INTERVAL
    return DeviceAuthorization(
        verification_uri=_url(doc, "verification_uri", required=True),
        user_code=user_code,
        expires_at=now + timedelta(seconds=float(expires_in)),
        interval=int(interval),
        verification_uri_complete=_url(doc, "verification_uri_complete", required=False),
        device_code=device_code,
    )


@dataclass
class PollState:
    """The polling pace (RFC 8628 3.5): `interval` grows by 5 s at each slow_down; while the
    provider cannot be reached, the wait doubles (up to a minute) and shrinks back once it answers."""

    interval: float
    backoff: float = 0.0

    def next_wait(self) -> float:
        return max(self.interval, self.backoff)

    def answered(self) -> None:
        self.backoff = 0.0

    def unreachable(self) -> None:
        self.backoff = min(MAX_BACKOFF, max(self.interval, self.backoff) * 2)


def now_utc() -> datetime:
    return datetime.now(UTC)
