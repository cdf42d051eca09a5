"""The window's failure paths, each shown in plain words with what to do next, on the real window."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from campusid.desktop.config import DesktopSettings
from campusid.desktop.core import DesktopCore, ProviderInfo, RateLimited
from campusid.desktop.core import events as ev
from campusid.desktop.core.errors import RefreshRejected
from campusid.desktop.core.token_store import FileTokenStore


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StubIdP:
    """An OIDCPort whose answers a test chooses (the real IdP cannot be made to rate-limit on cue)."""

    def __init__(self, login_error: Exception | None = None, refresh_error: Exception | None = None) -> None:
        self.login_error, self.refresh_error = login_error, refresh_error

    def provider(self) -> ProviderInfo:
        return ProviderInfo("http://idp.invalid", "http://idp.invalid/oauth/jwks")

    def browser_login(self, *, scope: str, timeout: float, open_browser: Callable[[str], Any]) -> Any:
        raise self.login_error

    def refresh(self, refresh_token: str) -> Any:
        raise self.refresh_error

    def revoke(self, token: str, hint: str) -> None:
        return None


def stub_core(tmp_path: Path, stub: StubIdP, session: dict | None = None) -> DesktopCore:
    store = FileTokenStore(tmp_path / "tokens.json", "tests")
    if session:
        store.save(session)
    settings = DesktopSettings(issuer="http://idp.invalid", data_dir=tmp_path / "stub")
    return DesktopCore(settings, oidc=stub, token_store=store)


def test_idp_unreachable_is_reported_with_what_to_do(qtbot, make_app) -> None:
    window = make_app(f"http://127.0.0.1:{closed_port()}").window
    qtbot.mouseClick(window.sign_in_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(window.banner.isVisible, timeout=10_000)
    assert window.message_label.text().startswith("CampusID cannot be reached right now. Check your internet")
    assert window.user_label.text() == "Not signed in" and window.sign_in_button.isEnabled()


def test_sign_in_waits_in_the_background_and_can_be_cancelled(qtbot, make_app, browser_command, tmp_path) -> None:

    # A browser that opens and does nothing: the person never finishes signing in.
    browser_command(f"{sys.executable} -c pass %s")
    from tests.desktop.fake_idp import FakeIdP

    idp = FakeIdP().start()
    try:
        app = make_app(idp.issuer)
        window = app.window
        qtbot.mouseClick(window.sign_in_button, Qt.MouseButton.LeftButton)
        opened = lambda: any(e.kind == ev.LOGIN_URL_OPENED for e in app.core.events.recent)  # noqa: E731
        qtbot.waitUntil(opened, timeout=10_000)
        # The window answers while the sign-in waits: the waiting panel shows and events are processed.
        assert window.waiting_panel.isVisible() and not window.sign_in_button.isEnabled()
        assert window.user_label.text() == "Waiting for the browser sign-in\u2026"
        started = time.monotonic()
        qtbot.mouseClick(window.cancel_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(window.banner.isVisible, timeout=5_000)
        assert time.monotonic() - started < 3
        assert window.message_label.text() == "Sign-in cancelled. Select \u201cSign in\u201d when you are ready."
        assert window.waiting_panel.isHidden() and window.sign_in_button.isEnabled()
        assert not app.core.session.login_pending
    finally:
        idp.stop()


def test_rate_limited_sign_in_says_when_to_retry(qtbot, make_app, tmp_path) -> None:
    core = stub_core(tmp_path, StubIdP(login_error=RateLimited("limit", retry_after=120)))
    window = make_app(core=core).window
    qtbot.mouseClick(window.sign_in_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(window.banner.isVisible, timeout=5_000)
    text = window.message_label.text()
    assert text.startswith("Too many sign-in attempts. Please wait and try again after ")
    assert "(in about 2 minutes)" in text


def test_expired_session_on_sync_asks_to_sign_in_again(qtbot, make_app, tmp_path) -> None:
    expired = {
        "access_token": "expired-access",
        "expires_at": time.time() - 60,
        "refresh_token": "revoked-refresh",
        "scope": "openid grades.read",
        "user_name": "Alice Zhang",
    }
    core = stub_core(tmp_path, StubIdP(refresh_error=RefreshRejected("over")), session=expired)
    window = make_app(core=core).window
    assert window.user_label.text() == "Signed in as Alice Zhang"
    qtbot.mouseClick(window.sync_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(window.banner.isVisible, timeout=5_000)
    # a refused refresh token means campusid ended the sign-in (single logout): said, with what to do
    text = window.message_label.text()
    assert text.startswith("You were signed out: campusid ended this sign-in")
    assert text.endswith("Select \u201cSign in\u201d to sign in again.")
    assert window.user_label.text() == "Not signed in" and window.sign_in_button.isVisible()
    assert not window.sync_button.isEnabled() and window.sync_progress.isHidden()
