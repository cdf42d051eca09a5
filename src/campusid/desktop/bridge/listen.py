"""The bridge's listening socket: IPv4 127.0.0.1 only, bound before any server starts."""

from __future__ import annotations

import errno
import socket

from .settings import BridgeConfigError, check_host


class BridgeStartError(Exception):
    """The bridge cannot listen; the message says why."""


def bind_loopback(host: str, port: int) -> socket.socket:
    """An IPv4 listening socket on 127.0.0.1:``port`` (no IPv6 listener), or :class:`BridgeStartError`."""
    try:
        check_host(host)
    except BridgeConfigError as exc:
        raise BridgeStartError(str(exc)) from None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BridgeStartError(
                f"port {port} on {host} is already in use (another campusid-desktop?); "
                "stop that program or choose another APP_BRIDGE_PORT"
            ) from None
        raise BridgeStartError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock
