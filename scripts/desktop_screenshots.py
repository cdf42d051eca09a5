#!/usr/bin/env python3
"""Screenshots of the desktop window, signed out and signed in with grades, for the README.

Runs offscreen (no display needed) against a ``campusid demo`` it starts on a free port, signs the
demo student alice in through tests/desktop/browser_login.py (set as BROWSER, so the real login and
consent pages are used), syncs, lets a script call the bridge, and saves
docs/screenshots/desktop-signed-out.png and desktop-signed-in.png via QWidget.grab().

    .venv/bin/python scripts/desktop_screenshots.py [--out docs/screenshots] [--lang en|zh_CN]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ["QT_QPA_PLATFORM"] = "offscreen"

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BROWSER_SCRIPT = ROOT / "tests" / "desktop" / "browser_login.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_demo(data_dir: Path, **settings: str) -> tuple[subprocess.Popen[str], dict]:
    """`campusid demo` on a free port with its data in `data_dir` (and `settings`, CAMPUSID_* values),
    answering; its process and the JSON line it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CAMPUSID_", "APP_BRIDGE_"))}
    env.update(
        CAMPUSID_DATA_DIR=str(data_dir),
        CAMPUSID_SECRET_KEY=secrets.token_urlsafe(48),
        CAMPUSID_ARGON2_MEMORY_COST="8192",
        CAMPUSID_ARGON2_TIME_COST="1",
        **settings,
    )
    process = subprocess.Popen(
        [str(BIN / "campusid"), "demo", "--port", str(free_port()), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    info = json.loads(process.stdout.readline())
    import httpx

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(info["issuer"] + "/.well-known/openid-configuration", timeout=1).status_code == 200:
                return process, info
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("campusid demo did not start")


def wait_until(app, predicate: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        app.processEvents()
        time.sleep(0.02)
    app.processEvents()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--lang", default="en", choices=["en", "zh_CN"])
    args = parser.parse_args()

    import httpx
    import keyring
    import keyring.backends.fail
    from PySide6.QtWidgets import QApplication

    from campusid.desktop.bridge.settings import BridgeSettings
    from campusid.desktop.config import DesktopSettings
    from campusid.desktop.core import DesktopCore
    from campusid.desktop.gui.app import DesktopApp
    from campusid.i18n import translator

    keyring.set_keyring(keyring.backends.fail.Keyring())  # never the real keyring
    app = QApplication([sys.argv[0]])
    suffix = "" if args.lang == "en" else f"-{args.lang}"
    with tempfile.TemporaryDirectory(prefix="campusid-shots-") as tmp:
        demo, info = start_demo(Path(tmp) / "idp")
        try:
            alice = next(u for u in info["users"] if u["username"] == "alice")
            os.environ.update(
                BROWSER=f"{sys.executable} {BROWSER_SCRIPT} %s",
                CAMPUSID_TEST_USERNAME=alice["username"],
                CAMPUSID_TEST_PASSWORD=alice["password"],
            )
            issuer = info["issuer"]
            settings = DesktopSettings(issuer=issuer, records_url=issuer + "/records/v1", data_dir=Path(tmp) / "d")
            token = secrets.token_urlsafe(32)
            bridge = BridgeSettings(token=token, port=0)
            desktop = DesktopApp(DesktopCore(settings), bridge, None, texts=translator(args.lang), tray=False)
            desktop.start()
            window = desktop.window
            window.resize(1120, 720)
            httpx.get(desktop.bridge.address + "/health", timeout=10)
            wait_until(app, lambda: window.calls_model.rowCount() == 1, "the first bridge call")
            args.out.mkdir(parents=True, exist_ok=True)
            window.grab().save(str(args.out / f"desktop-signed-out{suffix}.png"))

            window.sign_in()
            wait_until(app, lambda: desktop.core.session.current is not None and window.banner.isHidden(), "sign-in")
            window.sync_now()
            wait_until(app, lambda: window.grades_model.rowCount() > 0 and window.sync_progress.isHidden(), "sync")
            auth = {"Authorization": f"Bearer {token}"}
            httpx.get(desktop.bridge.address + "/status", headers=auth, timeout=10)
            httpx.get(desktop.bridge.address + "/grades", headers=auth, timeout=10)
            wait_until(app, lambda: window.calls_model.rowCount() == 3, "the script's bridge calls")
            window.statusBar().clearMessage()
            window.grab().save(str(args.out / f"desktop-signed-in{suffix}.png"))
            desktop.quit()
        finally:
            demo.terminate()
            demo.wait(10)
    print(f"saved desktop-signed-out{suffix}.png and desktop-signed-in{suffix}.png in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
