"""Shared fixtures and helpers for the desktop, bridge-client and chat-bot tests.

Everything runs over real HTTP on 127.0.0.1: a fake IdP (fake_idp.py), the real desktop core with
the real ``campusid.oidc_client`` adapter, and the bridge on a free port.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import keyring
import keyring.backends.fail
import pytest

from campusid.desktop.bridge import BridgeServer, BridgeSettings, bind_loopback, create_app
from campusid.desktop.config import DesktopSettings
from campusid.desktop.core import DesktopCore

from .fake_idp import CLIENT_ID, FakeIdP

# Fixed (not random) so parametrized test ids are the same in every pytest-xdist worker.
BRIDGE_TOKEN = "tB9kQ2xV7mN4pL8rW3sZ6yH1cF5gJ0dA-bridge-test-token"
_HTTP: list[httpx.Client] = []


def shared_http() -> httpx.Client:
    """One client for the whole test session: building an httpx client costs ~0.1 s (its TLS context)."""
    if not _HTTP:
        _HTTP.append(httpx.Client(timeout=30))
    return _HTTP[0]


RFC3339_MS_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


class HttpBrowser:
    """Stands in for ``webbrowser.open``: fetches the authorize URL and follows the redirect to the
    loopback callback, as a browser with a signed-in, consenting user would. ``finish=False``
    models a person who never completes the sign-in."""

    def __init__(self) -> None:
        self.http = shared_http()
        self.opened: list[str] = []
        self.finish = True
        self.callback_statuses: list[int] = []

    def __call__(self, url: str) -> bool:
        self.opened.append(url)
        if self.finish:
            self.complete(url)
        return True

    def complete(self, url: str | None = None) -> None:
        response = self.http.get(url or self.opened[-1], follow_redirects=True)
        self.callback_statuses.append(response.status_code)


class EnvelopeChecker:
    """Validates every bridge API response against the envelope schema of the bridge's own /openapi.json."""

    def __init__(self, openapi: dict[str, Any]) -> None:
        schema = {"$ref": "#/components/schemas/ApiResponse", "components": openapi["components"]}
        self.validator = jsonschema.Draft202012Validator(
            schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )
        self.checked = 0

    def check(self, response: httpx.Response) -> dict[str, Any]:
        assert response.headers["content-type"].startswith("application/json"), response.headers
        body = response.json()
        self.validator.validate(body)
        assert RFC3339_MS_Z.match(body["time"]), body["time"]
        assert datetime.fromisoformat(body["time"]).utcoffset().total_seconds() == 0
        assert body["success"] is (response.status_code < 400)
        self.checked += 1
        return body


_RESOURCES = re.compile(r"^/(openapi\.json)?$|^/static/")


@dataclass
class Bridge:
    url: str
    port: int
    core: DesktopCore
    server: BridgeServer
    checker: EnvelopeChecker | None = None
    responses: list[httpx.Response] = field(default_factory=list)
    http: httpx.Client = field(default_factory=shared_http)

    def request(self, method: str, path: str, *, token: str | None = BRIDGE_TOKEN, **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}) or {})
        if token is not None:
            headers.setdefault("Authorization", f"Bearer {token}")
        timeout = kwargs.pop("timeout", 30)
        response = self.http.request(method, self.url + path, headers=headers, timeout=timeout, **kwargs)
        self.record(response)
        return response

    def record(self, response: httpx.Response) -> None:
        self.responses.append(response)
        resource = _RESOURCES.match(response.request.url.path) and response.status_code == 200
        if not resource and response.request.method != "HEAD":
            assert self.checker is not None
            self.checker.check(response)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", path, **kwargs)


def desktop_settings(idp: FakeIdP, data_dir: Path) -> DesktopSettings:
    return DesktopSettings(
        issuer=idp.issuer, client_id=CLIENT_ID, records_url=idp.issuer + "/records/v1", data_dir=data_dir
    )


def start_bridge(core: DesktopCore, token: str = BRIDGE_TOKEN) -> Bridge:
    sock = bind_loopback("127.0.0.1", 0)
    port = sock.getsockname()[1]
    server = BridgeServer(create_app(core, BridgeSettings(token=token, port=port), port=port), sock)
    server.start_in_thread()
    bridge = Bridge(url=server.url, port=port, core=core, server=server)
    openapi = bridge.http.get(bridge.url + "/openapi.json").json()
    bridge.checker = EnvelopeChecker(openapi)
    return bridge


# -- fixtures -----------------------------------------------------------------------------------
@pytest.fixture(autouse=True, scope="session")
def no_os_keyring() -> Iterator[None]:
    """Never touch a developer's real keyring: the 0600-file fallback is what runs in tests."""
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    yield
    keyring.set_keyring(previous)


@pytest.fixture
def idp() -> Iterator[FakeIdP]:
    server = FakeIdP().start()
    yield server
    server.request_stop()  # winds down on its own thread; nothing waits for uvicorn's ~0.2 s shutdown


@pytest.fixture
def browser() -> HttpBrowser:
    return HttpBrowser()


def make_core(idp: FakeIdP, browser: HttpBrowser, data_dir: Path) -> DesktopCore:
    return DesktopCore(desktop_settings(idp, data_dir), open_browser=browser, http=shared_http())


@pytest.fixture
def core(idp: FakeIdP, browser: HttpBrowser, tmp_path: Path) -> DesktopCore:
    return make_core(idp, browser, tmp_path / "desktop")


@pytest.fixture
def bridge(core: DesktopCore, idp: FakeIdP) -> Iterator[Bridge]:
    running = start_bridge(core)
    yield running
    running.server.request_stop()


@pytest.fixture(scope="module")
def shared_bridge(tmp_path_factory: pytest.TempPathFactory, no_os_keyring: None) -> Iterator[Bridge]:
    """One bridge for a module of tests that change no state (no token failures, no sign-in)."""
    server = FakeIdP().start()
    core = make_core(server, HttpBrowser(), tmp_path_factory.mktemp("desktop"))
    running = start_bridge(core)
    yield running
    running.server.stop()
    server.stop()


def wait_until(predicate: Any, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true, failing after ``timeout`` seconds (never a fixed sleep)."""
    event = threading.Event()
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        event.wait(0.01)
