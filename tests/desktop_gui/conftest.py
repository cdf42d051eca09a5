"""Fixtures for the window tests: Qt offscreen, no OS keyring, and the real window over a real core."""

from __future__ import annotations

import os

os.environ["QT_QPA_PLATFORM"] = "offscreen"  # before anything imports Qt: no display needed

import secrets  # noqa: E402
import sys  # noqa: E402
import webbrowser  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("PySide6", reason="the window needs the extra 'desktop' (PySide6)")

from campusid.desktop.bridge.settings import BridgeSettings  # noqa: E402
from campusid.desktop.config import DesktopSettings  # noqa: E402
from campusid.desktop.core import DesktopCore  # noqa: E402
from campusid.desktop.gui.app import DesktopApp  # noqa: E402
from campusid.i18n import translator  # noqa: E402
from tests.desktop.harness import no_os_keyring  # noqa: E402, F401 - the session's autouse fixture

BRIDGE_TOKEN = secrets.token_urlsafe(32)
BROWSER_SCRIPT = Path(__file__).parents[1] / "desktop" / "browser_login.py"


@pytest.fixture
def browser_command(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Set BROWSER (as a person's system would) and make ``webbrowser`` read it afresh."""

    def use(command: str) -> None:
        monkeypatch.setenv("BROWSER", command)
        monkeypatch.setattr(webbrowser, "_tryorder", None)
        monkeypatch.setattr(webbrowser, "_browsers", {})

    return use


@pytest.fixture
def login_browser(browser_command, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """BROWSER = tests/desktop/browser_login.py, which signs in on the IdP's own login and consent pages."""

    def use(username: str, password: str) -> None:
        monkeypatch.setenv("CAMPUSID_TEST_USERNAME", username)
        monkeypatch.setenv("CAMPUSID_TEST_PASSWORD", password)
        browser_command(f"{sys.executable} {BROWSER_SCRIPT} %s")

    return use


@pytest.fixture
def make_app(qtbot, tmp_path: Path) -> Iterator[Callable[..., DesktopApp]]:
    """Build the real application (core, bridge on a free port, window); everything stops afterwards."""
    started: list[DesktopApp] = []

    def make(
        issuer: str = "http://127.0.0.1:9",
        *,
        bridge: bool = True,
        language: str = "en",
        tray: bool = False,
        core: DesktopCore | None = None,
    ) -> DesktopApp:
        settings = DesktopSettings(
            issuer=issuer, records_url=issuer + "/records/v1", data_dir=tmp_path / f"desktop{len(started)}"
        )
        core = core or DesktopCore(settings)
        bridge_settings = BridgeSettings(token=BRIDGE_TOKEN, port=0) if bridge else None
        error = None if bridge else Exception("APP_BRIDGE_TOKEN is not set")
        app = DesktopApp(core, bridge_settings, error, texts=translator(language), tray=tray)
        started.append(app)
        qtbot.addWidget(app.window)
        app.start()
        return app

    yield make
    for app in started:
        app.quit()
        app.core.http.close()
