"""Tray, Quit, one instance at a time, the bridge's "why not", and the interface language."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from PySide6.QtWidgets import QSystemTrayIcon

from campusid.desktop.gui.app import interface_texts
from campusid.desktop.gui.single_instance import instance_name

DESKTOP = Path(sys.executable).parent / "campusid-desktop"


def test_closing_keeps_the_bridge_in_the_tray_and_quit_stops_it(qtbot, make_app) -> None:
    app = make_app(tray=True)
    window, url = app.window, app.bridge.address
    with qtbot.waitSignal(window.close_requested, timeout=2_000):
        window.close()
    assert window.isHidden() and app.bridge.running
    assert httpx.get(url + "/health", timeout=5).status_code == 200

    quit_action = app.tray.contextMenu().actions()[-1]
    assert quit_action.text() == "Quit"
    with qtbot.waitSignal(app.quitting, timeout=10_000):
        quit_action.trigger()
    assert not app.bridge.running
    with pytest.raises(httpx.TransportError):
        httpx.get(url + "/health", timeout=2)


def test_without_a_tray_closing_the_window_quits(qtbot, make_app) -> None:
    app = make_app(tray=False)
    assert app.tray is None
    with qtbot.waitSignal(app.quitting, timeout=10_000):
        app.window.close()
    assert not app.bridge.running


def test_the_tray_is_used_only_where_one_exists(qtbot, make_app) -> None:
    app = make_app(tray=None)  # decided by the platform
    assert (app.tray is not None) is QSystemTrayIcon.isSystemTrayAvailable()


def test_bridge_not_running_says_why(qtbot, make_app) -> None:
    window = make_app(bridge=False).window
    assert window.bridge_status_label.text() == "Not running: APP_BRIDGE_TOKEN is not set"


def test_a_second_start_hands_over_to_the_first_and_exits(qtbot, make_app, tmp_path) -> None:
    app = make_app(bridge=False)
    data_dir = app.core.settings.data_dir
    assert app.claim_instance(instance_name(data_dir))
    app.window.hide()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APP_BRIDGE_", "CAMPUSID_"))}
    env.update(QT_QPA_PLATFORM="offscreen", CAMPUSID_DESKTOP_DATA_DIR=str(data_dir), LC_ALL="en_US.UTF-8")
    second = subprocess.Popen([str(DESKTOP)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The first instance must keep its event loop turning to answer; waitUntil does that.
        qtbot.waitUntil(lambda: second.poll() is not None, timeout=20_000)
    finally:
        if second.poll() is None:
            second.kill()
    out, err = second.communicate()
    assert second.returncode == 0, err
    assert "already running" in out
    assert app.window.isVisible()  # brought to the front


def test_language_follows_the_locale(qtbot, make_app, monkeypatch) -> None:
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8")
    assert interface_texts().locale == "zh_CN"
    window = make_app(language=interface_texts().locale, bridge=False).window
    assert window.sign_in_button.text() == "\u767b\u5f55"
    assert window.user_label.text() == "\u672a\u767b\u5f55"
    monkeypatch.setenv("LC_ALL", "en_GB.UTF-8")
    assert interface_texts().locale == "en"
