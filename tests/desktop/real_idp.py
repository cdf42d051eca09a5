"""campusid's own IdP served in process over real HTTP on 127.0.0.1 (uvicorn on a thread, with its
lifespan), for the bridge's and the bot's device sign-in tests: the desktop core talks to it as to
a deployed IdP, and the test can still reach its context (the device grant's clock, the store)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from campusid.desktop.bridge import bind_loopback
from campusid.desktop.config import DesktopSettings
from campusid.desktop.core import DesktopCore
from tests.desktop.harness import Bridge, start_bridge
from tests.idp.conftest import IdP
from tests.idp.device_helpers import decide, device_app
from tests.idp.helpers import Clock

DESKTOP_CLIENT = "campusid-desktop"


class ServedIdP:
    def __init__(self, env: dict) -> None:
        self.sock = bind_loopback("127.0.0.1", 0)
        self.issuer = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.idp = IdP({**env, "CAMPUSID_ISSUER": self.issuer})
        self.clock = self.idp.ctx.clock = Clock()
        self.server = uvicorn.Server(uvicorn.Config(self.idp.app, log_config=None, access_log=False, lifespan="on"))
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True)
        self.person = httpx.Client(timeout=30)

    def start(self) -> ServedIdP:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the IdP did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
        self.person.close()
        self.idp.store.close()

    def decide(self, user_code: str, decision: str = "allow") -> str:
        """A person enters the code on /device (in their own browser), signs in and decides."""
        self.person.cookies.clear()
        page = decide(self.person, self.issuer, user_code, decision=decision).text
        assert 'data-outcome="' in page, page[-500:]
        return page


@pytest.fixture
def served_idp(idp_env) -> Iterator[ServedIdP]:
    served = ServedIdP(idp_env).start()
    device_app(
        served.idp, DESKTOP_CLIENT, scopes=("openid", "profile", "offline_access", "grades.read")
    )  # the desktop app, its review granted the device grant
    yield served
    served.stop()


@pytest.fixture
def device_bridge(served_idp: ServedIdP, tmp_path: Path) -> Iterator[Bridge]:
    """The real desktop core and bridge, signed in to nobody, in front of the served IdP."""
    settings = DesktopSettings(
        issuer=served_idp.issuer,
        client_id=DESKTOP_CLIENT,
        records_url=served_idp.issuer + "/records/v1",
        data_dir=tmp_path / "desktop",
    )
    core = DesktopCore(settings, open_browser=lambda url: False)
    bridge = start_bridge(core)
    yield bridge
    core.session.cancel_login()
    bridge.server.request_stop()
    core.close()
