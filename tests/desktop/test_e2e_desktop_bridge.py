"""End to end with real processes: ``campusid demo`` (the IdP and records API), then
``campusid-desktop --headless`` whose browser is tests/desktop/browser_login.py (BROWSER), which
signs in on the real login and consent pages as a demo student.

login → sync → IdP stopped → cached grades still served → second login reuses the session
without a browser (the browser script ran exactly once, without the bridge token in its env).
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, stop_process

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
CAMPUSID = BIN / "campusid"
DESKTOP = BIN / "campusid-desktop"
BROWSER_SCRIPT = Path(__file__).with_name("browser_login.py")

if importlib.util.find_spec("campusid.idp") is None or not CAMPUSID.exists():
    pytest.skip("the IdP (campusid.idp and the `campusid` command) is not available yet", allow_module_level=True)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APP_BRIDGE_", "CAMPUSID_"))}
    env.update(extra)
    return env


def first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if selector.select(timeout=0.1):
            return process.stdout.readline()
        assert process.poll() is None, f"campusid demo exited: {process.stderr.read() if process.stderr else ''}"
    raise AssertionError("campusid demo printed nothing")


def wait_for(url: str, process: subprocess.Popen[str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None, f"{process.args} exited early"
        assert time.monotonic() < deadline, f"{url} did not come up"
        time.sleep(0.05)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], dict]]:
    port = free_port()
    env = clean_env(
        CAMPUSID_DATA_DIR=str(tmp_path / "idp"),
        CAMPUSID_SECRET_KEY=secrets.token_urlsafe(48),
        CAMPUSID_ARGON2_MEMORY_COST="8192",
        CAMPUSID_ARGON2_TIME_COST="1",
    )
    process = subprocess.Popen(
        [str(CAMPUSID), "demo", "--port", str(port), "--json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(first_line(process, 60))
        wait_for(info["issuer"] + "/.well-known/openid-configuration", process)
        yield process, info
    finally:
        stop_process(process)


def test_login_sync_offline_grades_and_session_reuse(tmp_path: Path, demo) -> None:
    idp_process, info = demo
    student = next(u for u in info["users"] if u["role"] == "student")
    native = next(c for c in info["clients"] if c["type"] == "native")
    token = secrets.token_urlsafe(32)
    port = free_port()
    browser_log = tmp_path / "browser.log"
    env = clean_env(
        APP_BRIDGE_TOKEN=token,
        APP_BRIDGE_PORT=str(port),
        CAMPUSID_DESKTOP_ISSUER=info["issuer"],
        CAMPUSID_DESKTOP_CLIENT_ID=native["client_id"],
        CAMPUSID_DESKTOP_DATA_DIR=str(tmp_path / "desktop"),
        PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
        BROWSER=f"{sys.executable} {BROWSER_SCRIPT} %s",
        CAMPUSID_TEST_USERNAME=student["username"],
        CAMPUSID_TEST_PASSWORD=student["password"],
        CAMPUSID_TEST_BROWSER_LOG=str(browser_log),
    )
    desktop = subprocess.Popen(
        [str(DESKTOP), "--headless"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    bridge = f"http://127.0.0.1:{port}"
    auth = {"Authorization": f"Bearer {token}"}
    try:
        wait_for(bridge + "/health", desktop)
        with httpx.Client(base_url=bridge, headers=auth, timeout=60) as client:
            login = client.post("/login", json={"timeout": 60})
            assert login.status_code == 200, login.text
            assert login.json()["data"]["user"]["name"] == student["name"]
            assert login.json()["data"]["reused"] is False

            sync = client.post("/sync_grades")
            assert sync.status_code == 200, sync.text
            grades = sync.json()["data"]["grades"]
            assert grades, "the demo student has courses"
            for grade in grades:
                assert {"course_code", "course_name", "term", "credits", "score", "grade_point"} <= set(grade)

            stop_process(idp_process)  # the IdP and the records API are gone
            cached = client.get("/grades")
            assert cached.status_code == 200, cached.text
            assert cached.json()["data"]["grades"] == grades
            assert cached.json()["data"]["synced_at"] == sync.json()["data"]["synced_at"]

            again = client.post("/login")
            assert again.status_code == 200, again.text
            assert again.json()["data"]["reused"] is True
    finally:
        stop_process(desktop)
        out, err = desktop.communicate()
    runs = [json.loads(line) for line in browser_log.read_text().splitlines()]
    assert len(runs) == 1, runs
    assert runs[0]["saw_bridge_token"] is False
    assert token not in out + err
