"""``campusid-desktop``: the window (extra ``desktop``), or ``--headless``: core and bridge only.

Exit status 2 means the bridge (headless) or the window cannot start, or a setting such as
``CAMPUSID_DESKTOP_ISSUER`` cannot be used; the reason is on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys

from . import log_setup
from .bridge.listen import BridgeStartError, bind_loopback
from .bridge.settings import BridgeConfigError, BridgeSettings
from .config import DesktopConfigError, DesktopSettings

EXIT_CANNOT_START = 2
log = logging.getLogger("campusid.desktop")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="campusid-desktop",
        description="campusid desktop app: sign in, sync grades, and a local bridge on 127.0.0.1.",
    )
    parser.add_argument(
        "--headless",
        action="store_true",
        help="run the core and the bridge only (no window, no GUI packages needed)",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def _say(message: str) -> None:
    print(f"campusid-desktop: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    redact = log_setup.configure(args.log_level)
    # Read APP_BRIDGE_TOKEN once and remove it from the environment before anything can start a
    # child process (the browser for the sign-in must not inherit it).
    bridge: BridgeSettings | None = None
    bridge_error: BridgeConfigError | None = None
    try:
        bridge = BridgeSettings.from_environ()
        redact.add(bridge.token)
    except BridgeConfigError as exc:
        bridge_error = exc
    try:
        settings = DesktopSettings.from_env()
    except DesktopConfigError as exc:
        _say(f"cannot start: {exc}")
        sys.exit(EXIT_CANNOT_START)
    run = run_headless if args.headless else run_gui
    sys.exit(run(bridge, bridge_error, settings))


def run_headless(
    bridge: BridgeSettings | None, bridge_error: BridgeConfigError | None, settings: DesktopSettings | None = None
) -> int:
    if bridge is None:
        _say(f"the bridge cannot start: {bridge_error}")
        return EXIT_CANNOT_START
    try:
        sock = bind_loopback(bridge.host, bridge.port)
    except BridgeStartError as exc:
        _say(f"the bridge cannot start: {exc}")
        return EXIT_CANNOT_START
    # The web stack and the core load only now: start errors above are reported at once.
    from .bridge.app import create_app
    from .bridge.server import BridgeServer
    from .core import DesktopCore

    settings = settings or DesktopSettings.from_env()
    core = DesktopCore(settings)
    server = BridgeServer(create_app(core, bridge, port=sock.getsockname()[1]), sock)
    where = f"signs in at {settings.issuer}; tokens kept in the {core.token_store.detail}"
    _say(f"bridge listening on {server.url}; {where}")
    server.serve()
    return 0


def run_gui(
    bridge: BridgeSettings | None, bridge_error: BridgeConfigError | None, settings: DesktopSettings | None = None
) -> int:
    """Hand over to the window, ``campusid.desktop.gui.main``, when PySide6 is installed."""
    try:
        import PySide6  # noqa: F401
    except ImportError:
        _say(
            "the desktop window needs PySide6: install the extra 'campusid[desktop]', "
            "or run 'campusid-desktop --headless' for the core and the bridge only"
        )
        return EXIT_CANNOT_START
    from .gui import main as run_window

    return int(run_window(bridge, bridge_error, settings=settings) or 0)
