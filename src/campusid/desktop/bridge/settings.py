"""Bridge configuration (docs/configuration.md): the token is read once and removed from the environment."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import MutableMapping
from dataclasses import dataclass, field

DEFAULT_PORT = 4399
LOOPBACK_HOST = "127.0.0.1"
MIN_TOKEN_LENGTH = 32
MAKE_TOKEN_HINT = (
    'make one with: python -c "import secrets; print(secrets.token_urlsafe(32))" '
    "and export it as APP_BRIDGE_TOKEN before starting campusid-desktop"
)


class BridgeConfigError(Exception):
    """The bridge must not start; the message says why and what to do."""


@dataclass(frozen=True)
class BridgeSettings:
    token: str = field(repr=False)
    port: int = DEFAULT_PORT
    host: str = LOOPBACK_HOST
    max_body: int = 64 * 1024
    failed_token_limit: int = 10
    failed_token_window: float = 60.0

    def __post_init__(self) -> None:
        check_token(self.token)
        check_host(self.host)

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None) -> BridgeSettings:
        """Read APP_BRIDGE_* and delete APP_BRIDGE_TOKEN from ``environ`` first, whatever happens next."""
        env = os.environ if environ is None else environ
        token = env.pop("APP_BRIDGE_TOKEN", None)  # a browser started later must not inherit it
        if token is None:
            raise BridgeConfigError(f"APP_BRIDGE_TOKEN is not set; {MAKE_TOKEN_HINT}")
        return cls(
            token=token,
            port=_port(env.get("APP_BRIDGE_PORT")),
            host=env.get("APP_BRIDGE_HOST", LOOPBACK_HOST),
        )


def check_token(token: str) -> None:
    if len(token) < MIN_TOKEN_LENGTH:
        raise BridgeConfigError(
            f"APP_BRIDGE_TOKEN is too short ({len(token)} characters, at least {MIN_TOKEN_LENGTH} needed); "
            + MAKE_TOKEN_HINT
        )
    if not token.isascii() or not token.isprintable() or " " in token:
        raise BridgeConfigError("APP_BRIDGE_TOKEN must be printable ASCII without spaces; " + MAKE_TOKEN_HINT)


def check_host(host: str) -> None:
    """Only 127.0.0.1; a LAN, public, wildcard or IPv6 address is refused loudly."""
    if host == LOOPBACK_HOST:
        return
    try:
        kind = "a wildcard address" if ipaddress.ip_address(host).is_unspecified else "not 127.0.0.1"
    except ValueError:
        kind = "not an IP literal"
    raise BridgeConfigError(
        f"APP_BRIDGE_HOST={host!r} is refused ({kind}): the bridge listens on 127.0.0.1 only, "
        "never on a LAN or public address; unset APP_BRIDGE_HOST"
    )


def _port(value: str | None) -> int:
    if value is None or value == "":
        return DEFAULT_PORT
    try:
        port = int(value)
    except ValueError:
        raise BridgeConfigError(f"APP_BRIDGE_PORT={value!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise BridgeConfigError(f"APP_BRIDGE_PORT={port} is out of range (0-65535, 0 picks a free port)")
    return port
