"""``campusid-desktop --headless`` as a real process: start errors exit 2 with the reason and leave
nothing listening; a good start serves the bridge and keeps APP_BRIDGE_TOKEN from child processes."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

from .fake_idp import FakeIdP

BIN = Path(sys.executable).parent
DESKTOP = str(BIN / "campusid-desktop")
BROWSER_SCRIPT = Path(__file__).with_name("browser_login.py")


def nothing_listens(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def base_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APP_BRIDGE_", "CAMPUSID_"))}
    env.update(
        CAMPUSID_DESKTOP_DATA_DIR=str(tmp_path / "data"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        BROWSER=f"{sys.executable} {BROWSER_SCRIPT} %s",
        CAMPUSID_TEST_BROWSER_LOG=str(tmp_path / "browser.log"),
    )
    env.update(extra)
    return env


def run_desktop(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([DESKTOP, *args], env=env, capture_output=True, text=True, timeout=30)


def test_no_token_exits_2_and_says_how_to_make_one(tmp_path: Path) -> None:
    port = free_port()
    result = run_desktop(base_env(tmp_path, APP_BRIDGE_PORT=str(port)), "--headless")
    assert result.returncode == 2
    assert "APP_BRIDGE_TOKEN is not set" in result.stderr
    assert "secrets.token_urlsafe(32)" in result.stderr
    assert nothing_listens(port)


def test_short_token_exits_2(tmp_path: Path) -> None:
    port = free_port()
    short = "s" * 31
    result = run_desktop(base_env(tmp_path, APP_BRIDGE_TOKEN=short, APP_BRIDGE_PORT=str(port)), "--headless")
    assert result.returncode == 2
    assert "too short" in result.stderr and "at least 32" in result.stderr
    assert short not in result.stderr + result.stdout
    assert nothing_listens(port)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "::", "localhost"])
def test_non_loopback_host_is_refused_at_start(tmp_path: Path, host: str) -> None:
    port = free_port()
    env = base_env(
        tmp_path, APP_BRIDGE_TOKEN=secrets.token_urlsafe(32), APP_BRIDGE_PORT=str(port), APP_BRIDGE_HOST=host
    )
    result = run_desktop(env, "--headless")
    assert result.returncode == 2
    assert f"APP_BRIDGE_HOST={host!r} is refused" in result.stderr
    assert nothing_listens(port)


def test_port_in_use_is_a_clear_start_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = base_env(tmp_path, APP_BRIDGE_TOKEN=secrets.token_urlsafe(32), APP_BRIDGE_PORT=str(port))
        result = run_desktop(env, "--headless")
    assert result.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in result.stderr


def test_without_headless_and_without_pyside6_exits_2_and_says_what_to_install(tmp_path: Path) -> None:
    # A PySide6 that cannot be imported stands first on the path, as if the extra were not installed.
    stub = tmp_path / "no_pyside6" / "PySide6"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('PySide6 is not installed (test stub)')\n")
    port = free_port()
    env = base_env(
        tmp_path,
        APP_BRIDGE_TOKEN=secrets.token_urlsafe(32),
        APP_BRIDGE_PORT=str(port),
        PYTHONPATH=str(stub.parent),
    )
    result = run_desktop(env)
    assert result.returncode == 2
    assert "campusid[desktop]" in result.stderr
    assert "--headless" in result.stderr
    assert "Traceback" not in result.stderr
    assert nothing_listens(port)


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    server = FakeIdP().start()
    yield server
    server.stop()


def test_headless_serves_and_the_browser_does_not_inherit_the_token(tmp_path: Path, idp: FakeIdP) -> None:
    token = secrets.token_urlsafe(32)
    port = free_port()
    env = base_env(tmp_path, APP_BRIDGE_TOKEN=token, APP_BRIDGE_PORT=str(port), CAMPUSID_DESKTOP_ISSUER=idp.issuer)
    process = subprocess.Popen(
        [DESKTOP, "--headless"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the bridge did not come up"
            time.sleep(0.05)
        login = httpx.post(url + "/login", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert login.status_code == 200, login.text
        assert login.json()["data"]["user"] == {"name": "Ada Student"}
        runs = [json.loads(line) for line in (tmp_path / "browser.log").read_text().splitlines()]
        assert runs == [{"saw_bridge_token": False, "authorize": idp.issuer + "/oauth/authorize"}]
        assert (tmp_path / "data" / "tokens.json").stat().st_mode & 0o777 == 0o600
    finally:
        process.terminate()
        out, err = process.communicate(timeout=15)
    assert token not in out + err
    assert "tokens are kept in file" in err  # the keyring-less fallback is reported
    assert "POST /login 200" in err


@pytest.mark.parametrize(
    ("issuer", "hint"),
    [
        ("idp.example.edu", "must start with https://"),
        ("https://idp.example.edu?tenant=1", "must not have a query"),
        ("https://idp.example.edu/#top", "must not have a fragment"),
        ("https://admin:pw@idp.example.edu", "must not contain user information"),
        ("https://idp.example.edu/" + "a" * 10_240, "is longer than 2048 characters"),
    ],
)
def test_a_bad_issuer_exits_2_with_the_reason_and_no_traceback(tmp_path: Path, issuer: str, hint: str) -> None:
    port = free_port()
    env = base_env(
        tmp_path,
        APP_BRIDGE_TOKEN=secrets.token_urlsafe(32),
        APP_BRIDGE_PORT=str(port),
        CAMPUSID_DESKTOP_ISSUER=issuer,
    )
    result = run_desktop(env, "--headless")
    assert result.returncode == 2
    assert f"campusid-desktop: cannot start: CAMPUSID_DESKTOP_ISSUER {hint}" in result.stderr
    assert "Traceback" not in result.stderr
    assert "pw@" not in result.stderr + result.stdout
    assert len(result.stderr) < 1000  # a 10 KB value is not echoed back
    assert nothing_listens(port)


def test_a_bad_issuer_stops_the_window_too_before_qt_loads(tmp_path: Path) -> None:
    # A PySide6 that would fail the test if imported: the setting is checked before the window loads.
    stub = tmp_path / "no_qt" / "PySide6"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise SystemExit('PySide6 was imported')\n")
    env = base_env(tmp_path, CAMPUSID_DESKTOP_ISSUER="ftp://idp.example.edu", PYTHONPATH=str(stub.parent))
    result = run_desktop(env)
    assert result.returncode == 2
    assert "CAMPUSID_DESKTOP_ISSUER must start with https://" in result.stderr
    assert "PySide6 was imported" not in result.stderr


def test_a_unicode_issuer_host_is_used_in_its_ascii_form(tmp_path: Path) -> None:
    port = free_port()
    env = base_env(
        tmp_path,
        APP_BRIDGE_TOKEN=secrets.token_urlsafe(32),
        APP_BRIDGE_PORT=str(port),
        CAMPUSID_DESKTOP_ISSUER="HTTPS://Bücher.Example:443/idp/",
    )
    process = subprocess.Popen(
        [DESKTOP, "--headless"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the bridge did not come up"
            time.sleep(0.05)
    finally:
        process.terminate()
        _, err = process.communicate(timeout=15)
    assert "signs in at https://xn--bcher-kva.example/idp;" in err
