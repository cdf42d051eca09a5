"""The desktop window (extra ``desktop``): PySide6 over :class:`campusid.desktop.core.DesktopCore`.

``campusid-desktop`` (without ``--headless``) calls :func:`main`. Qt loads only when it is called.
The window sits below the command line (``campusid.desktop.cli`` reads the bridge and desktop settings
once and hands them over), so nothing here imports the command back: to start the app from Python, call
``campusid.desktop.cli.main``.
"""

from __future__ import annotations

from typing import Any


def main(bridge: Any, bridge_error: Exception | None, *, settings: Any = None) -> int:
    from .app import main as run

    return run(bridge, bridge_error, settings=settings)
