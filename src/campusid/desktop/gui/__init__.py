"""The desktop window (extra ``desktop``): PySide6 over :class:`campusid.desktop.core.DesktopCore`.

``campusid-desktop`` (without ``--headless``) calls :func:`main`. Qt loads only when it is called.
"""

from __future__ import annotations

from typing import Any


def main(bridge: Any, bridge_error: Exception | None) -> int:
    from .app import main as run

    return run(bridge, bridge_error)


def run(argv: list[str] | None = None) -> int:
    """``campusid-desktop`` from Python: reads APP_BRIDGE_* like the command does."""
    from ..cli import main as cli_main

    try:
        cli_main(argv or [])
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0
