"""End to end on the installed wheel, with the checkout out of reach: from a fresh venv,
`campusid serve` migrates a new database and answers; `campusid demo` (SQLite default, its own data
directory) serves a student's sign-in through the real login and consent pages and the demo grades on
the records API; `campusid-desktop --headless` signs in through its browser
(tests/desktop/browser_login.py, by BROWSER) and syncs the same grades through its bridge.

The smoke is about the install, not the database backend: it runs in the SQLite pass of the suite.
"""

from __future__ import annotations

import csv
import json
import os
import re
import secrets
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
import pytest

from tests.conftest import free_port, stop_process
from tests.idp.helpers import auth_params, code_exchange, login_through_pages

from .conftest import ROOT, Installed

T = TypeVar("T")

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(600),
    pytest.mark.skipif(
        os.environ.get("CAMPUSID_DATABASE_URL", "").startswith("postgres"),
        reason="the installed-wheel smoke checks the install and runs in the SQLite pass (`campusid demo` on its "
        "default database); this pass is about the PostgreSQL backend",
    ),
]

BROWSER_SCRIPT = ROOT / "tests" / "desktop" / "browser_login.py"
DEMO_GRADES = ROOT / "src" / "campusid" / "records" / "demo_grades.csv"
GRADE_FIELDS = ("course_code", "course_name", "term", "credits", "score", "grade_point")


@dataclass
class Started:
    """A command of the installed venv running in the background. Its output goes to files: a pipe
    that nobody reads while the test runs could fill up and stall it."""

    process: subprocess.Popen[str]
    out: Path
    err: Path

    def output(self) -> str:
        return self.out.read_text(errors="replace") + self.err.read_text(errors="replace")

    def assert_running(self) -> None:
        assert self.process.poll() is None, (
            f"{self.process.args} exited with status {self.process.returncode}:\n{self.output()}"
        )


def start(installed: Installed, logs: Path, command: str, *args: str, env: dict[str, str]) -> Started:
    logs.mkdir(parents=True, exist_ok=True)
    out, err = logs / f"{command}.out", logs / f"{command}.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [str(installed.bin / command), *args], cwd=installed.home, env=env, stdout=stdout, stderr=stderr, text=True
        )
    return Started(process, out, err)


def poll(check: Callable[[], T | None], started: Started, what: str, timeout: float = 60) -> T:
    """`check()`'s first answer that is not None, while the command runs; fails at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found is not None:
            return found
        started.assert_running()
        assert time.monotonic() < deadline, f"{what}: nothing within {timeout} s\n{started.output()}"
        time.sleep(0.05)  # the polling interval, not a wait for a race


def first_line(started: Started, timeout: float = 90) -> str:
    def line() -> str | None:
        text = started.out.read_text()
        return text.split("\n", 1)[0] if "\n" in text else None

    return poll(line, started, f"{started.process.args} printing its first line", timeout)


def wait_until_answering(url: str, started: Started) -> None:
    def answers() -> bool | None:
        try:
            return True if httpx.get(url, timeout=2).status_code == 200 else None
        except httpx.TransportError:
            return None

    poll(answers, started, f"{url} answering 200")


def stop(started: Started) -> str:
    """Stops the command; its output."""
    stop_process(started.process)
    return started.output()


def expected_grades(student_number: str) -> list[tuple]:
    """The student's rows of the demo CSV in the checkout, in the records API's field order."""
    with DEMO_GRADES.open(newline="", encoding="utf-8") as f:
        rows = [row for row in csv.DictReader(f) if row["student_number"] == student_number]
    assert rows, f"no demo grades for {student_number}"
    return sorted(normalized(row) for row in rows)


def normalized(grade: dict) -> tuple:
    return tuple(
        float(grade[field]) if field in ("credits", "score", "grade_point") else grade[field] for field in GRADE_FIELDS
    )


def linked_static(page: str) -> list[str]:
    return re.findall(r'(?:href|src)="([^"]*/static/[^"]+)"', page)


@pytest.fixture(scope="module")
def demo(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict, Path]]:
    data_dir = tmp_path_factory.mktemp("demo-data")
    port = free_port()
    env = {**installed.env, "CAMPUSID_DATA_DIR": str(data_dir)}
    server = start(installed, data_dir / "logs", "campusid", "demo", "--port", str(port), "--json", env=env)
    try:
        info = json.loads(first_line(server))
        assert info["issuer"] == f"http://127.0.0.1:{port}"
        wait_until_answering(info["issuer"] + "/.well-known/openid-configuration", server)
        yield info, data_dir
    finally:
        stop(server)


def test_campusid_resolves_into_the_fresh_venv(installed: Installed) -> None:
    probe = (
        "import json, sys, sysconfig, campusid, campusid.cli, campusid.desktop.cli;"
        "print(json.dumps({'file': campusid.__file__, 'purelib': sysconfig.get_paths()['purelib'], 'path': sys.path}))"
    )
    result = installed.run(str(installed.bin / "python"), "-c", probe)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    purelib = Path(found["purelib"]).resolve()
    assert purelib.is_relative_to(installed.venv.resolve()), found
    assert Path(found["file"]).resolve() == purelib / "campusid" / "__init__.py", found
    reachable = [p for p in found["path"] if Path(p or installed.home).resolve().is_relative_to(ROOT)]
    assert not reachable, f"the checkout is on the installed Python's path: {reachable}"
    for command in ("campusid", "campusid-desktop"):
        shebang = (installed.bin / command).read_text().splitlines()[0]
        assert shebang == f"#!{installed.bin / 'python'}", f"{command} runs {shebang}"


def test_serve_migrates_a_new_database_and_answers_discovery(installed: Installed, tmp_path: Path) -> None:
    port = free_port()
    env = {**installed.env, "CAMPUSID_DATA_DIR": str(tmp_path / "serve-data")}
    server = start(installed, tmp_path / "logs", "campusid", "serve", "--port", str(port), env=env)
    issuer = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(issuer + "/.well-known/openid-configuration", server)
        discovery = httpx.get(issuer + "/.well-known/openid-configuration").json()
        assert discovery["issuer"] == issuer
        keys = httpx.get(discovery["jwks_uri"]).json()["keys"]
        assert {key["alg"] for key in keys} == {"RS256", "ES256"}, keys
    finally:
        stop(server)
    assert (tmp_path / "serve-data" / "campusid.db").is_file()


def test_demo_signs_a_student_in_and_serves_the_demo_grades(demo: tuple[dict, Path]) -> None:
    info, data_dir = demo
    issuer = info["issuer"]
    assert (data_dir / "campusid.db").is_file(), "the demo's default database is SQLite in its data directory"
    student = next(u for u in info["users"] if u["role"] == "student" and u["student_number"])
    native = next(c for c in info["clients"] if c["type"] == "native")
    redirect_uri = native["redirect_uris"][0]
    flow = auth_params(native["client_id"], redirect_uri, scope="openid profile grades.read")
    with httpx.Client(timeout=30) as browser:
        login_page = browser.get(f"{issuer}/oauth/authorize", params=flow.params, follow_redirects=True)
        assert 'id="login-form"' in login_page.text, login_page.text[:500]
        assets = linked_static(login_page.text)
        assert assets, "the login page links its static files"
        for link in assets:
            asset = browser.get(httpx.URL(str(login_page.url)).join(link))
            assert asset.status_code == 200 and asset.content, (link, asset.status_code)

        callback = login_through_pages(browser, issuer, flow, student["username"], student["password"])
        assert callback["state"] == flow.params["state"] and callback["iss"] == issuer, callback
        token = browser.post(
            f"{issuer}/oauth/token", data=code_exchange(flow, callback["code"], redirect_uri, native["client_id"])
        )
        assert token.status_code == 200, token.text
        assert "grades.read" in token.json()["scope"].split()

        records = browser.get(
            f"{issuer}/records/v1/grades", headers={"Authorization": f"Bearer {token.json()['access_token']}"}
        )
    assert records.status_code == 200, records.text
    assert records.json()["student"]["name"] == student["name"]
    assert sorted(normalized(g) for g in records.json()["grades"]) == expected_grades(student["student_number"])


def test_the_installed_wheel_serves_the_pages_in_chinese(demo: tuple[dict, Path]) -> None:
    """The compiled catalogues ship in the wheel: a Chinese browser, an app's ui_locales and the
    language switch each get the Chinese pages from the installed product."""
    info, _ = demo
    issuer = info["issuer"]
    native = next(c for c in info["clients"] if c["type"] == "native")
    flow = auth_params(native["client_id"], native["redirect_uris"][0])
    with httpx.Client(timeout=30) as browser:
        by_header = browser.get(f"{issuer}/oauth/authorize", params=flow.params, headers={"Accept-Language": "zh-CN"})
        assert '<html lang="zh-CN">' in by_header.text and "用户名/学工号" in by_header.text, by_header.text[:500]
        by_app = browser.get(f"{issuer}/oauth/authorize", params={**flow.params, "ui_locales": "zh-CN"})
        assert "统一身份认证" in by_app.text and "密码" in by_app.text
        switched = browser.get(f"{issuer}/language", params={"lang": "zh-CN", "next": "/device"}, follow_redirects=True)
        assert "设备登录" in switched.text and '<html lang="zh-CN">' in switched.text
        discovery = browser.get(f"{issuer}/.well-known/openid-configuration").json()
    assert discovery["ui_locales_supported"] == ["en", "zh-CN"]


def test_headless_desktop_syncs_the_demo_grades_through_its_bridge(
    installed: Installed, demo: tuple[dict, Path], tmp_path: Path
) -> None:
    info, _ = demo
    student = next(u for u in info["users"] if u["role"] == "student" and u["student_number"])
    bridge_token = secrets.token_urlsafe(32)
    port = free_port()
    browser_log = tmp_path / "browser.log"
    env = {
        **installed.env,
        "APP_BRIDGE_TOKEN": bridge_token,
        "APP_BRIDGE_PORT": str(port),
        "CAMPUSID_DESKTOP_ISSUER": info["issuer"],  # the client id and records URL are the defaults
        "CAMPUSID_DESKTOP_DATA_DIR": str(tmp_path / "desktop"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        # The stand-in browser is test equipment, not the product: it runs on the test's Python.
        "BROWSER": f"{shlex.join([sys.executable, str(BROWSER_SCRIPT)])} %s",
        "CAMPUSID_TEST_USERNAME": student["username"],
        "CAMPUSID_TEST_PASSWORD": student["password"],
        "CAMPUSID_TEST_BROWSER_LOG": str(browser_log),
    }
    desktop = start(installed, tmp_path / "logs", "campusid-desktop", "--headless", env=env)
    bridge = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(bridge + "/health", desktop)
        with httpx.Client(base_url=bridge, timeout=90) as client:
            index = client.get("/")
            assert index.status_code == 200 and "text/html" in index.headers["content-type"], index.text[:300]
            assets = linked_static(index.text)
            assert assets, "the bridge's page links its static files"
            for link in assets:
                asset = client.get(link)
                assert asset.status_code == 200 and asset.content, (link, asset.status_code)
            assert client.get("/openapi.json").json()["openapi"].startswith("3.")

            auth = {"Authorization": f"Bearer {bridge_token}"}
            login = client.post("/login", json={"timeout": 60}, headers=auth)
            assert login.status_code == 200, login.text
            assert login.json()["data"]["user"]["name"] == student["name"]

            sync = client.post("/sync_grades", headers=auth)
        assert sync.status_code == 200, sync.text
        grades = sync.json()["data"]["grades"]
        assert sorted(normalized(g) for g in grades) == expected_grades(student["student_number"])
    finally:
        output = stop(desktop)
    runs = [json.loads(line) for line in browser_log.read_text().splitlines()]
    assert len(runs) == 1 and runs[0]["authorize"] == info["issuer"] + "/oauth/authorize", runs
    assert bridge_token not in output
