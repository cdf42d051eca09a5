"""The local automation bridge: HTTP on 127.0.0.1 for scripts and chat bots (the README's desktop section).

Names are imported lazily so that a start error (bad token, busy port) is reported before the
web stack is even loaded.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "create_app": ".app",
    "BridgeServer": ".server",
    "BridgeStartError": ".listen",
    "bind_loopback": ".listen",
    "BridgeConfigError": ".settings",
    "BridgeSettings": ".settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name], __name__), name)
