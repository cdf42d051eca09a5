"""Real servers for the web-client tests: `campusid demo` as a subprocess, the example web client
as `python -m examples.web_client` or in-process on uvicorn (when a test wraps its transport),
and a web client registration for the web client's actual port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import uvicorn
from examples.web_client import Settings, create_app

from campusid.idp.settings import load_settings
from campusid.idp.store import open_store
from tests.conftest import Server, free_port, start_server, stop_process
from tests.idp.helpers import active_client

ROOT = Path(__file__).resolve().parents[2]
SCOPES = ["openid", "profile", "grades.read"]


def wait_until(check: Callable[[], bool], timeout: float = 20, what: str = "condition") -> None:
    """Poll ``check`` until it is true or the deadline passes (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (httpx.HTTPError, OSError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{what} not reached within {timeout} s")


def _drain(stream) -> None:
    for _ in iter(stream.readline, ""):
        pass


class Demo:
    """`campusid demo --json` and the JSON object it prints first."""

    def __init__(self, env: dict) -> None:
        self.server: Server = start_server(env, "--json", command="demo")
        self.env = self.server.env
        self.issuer = self.server.issuer
        self.info = json.loads(self.server.proc.stdout.readline())
        # keep the pipes flowing so the server never blocks on a full pipe
        for stream in (self.server.proc.stdout, self.server.proc.stderr):
            threading.Thread(target=_drain, args=(stream,), daemon=True).start()

    def password(self, username: str) -> str:
        return next(u["password"] for u in self.info["users"] if u["username"] == username)

    def register_web_client(self, port: int, client_id: str) -> str:
        """Register, review and activate a web client for http://127.0.0.1:{port}/callback through the
        same services the CLI uses; the running server sees it at once (the database is shared)."""
        settings = load_settings(self.env)
        store = open_store(settings.database_url, settings.data_dir)
        try:
            cid, secret = active_client(
                store,
                client_type="web",
                redirect_uris=[f"http://127.0.0.1:{port}/callback"],
                scopes=SCOPES,
                client_id=client_id,
            )
        finally:
            store.close()
        assert cid == client_id and secret
        return secret

    def stop(self) -> None:
        self.server.stop()


class WebClientProcess:
    """`python -m examples.web_client` configured only through its environment; what it prints is
    kept in `lines` (it says, for one, what each back-channel logout did)."""

    def __init__(self, issuer: str, client_id: str, secret: str, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.lines: list[str] = []
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CAMPUSID_", "WEB_CLIENT_"))}
        env.update(
            {
                "CAMPUSID_ISSUER": issuer,
                "WEB_CLIENT_ID": client_id,
                "WEB_CLIENT_SECRET": secret,
                "WEB_CLIENT_PORT": str(port),
            }
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "examples.web_client"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        threading.Thread(target=lambda: self.lines.extend(iter(self.proc.stdout.readline, "")), daemon=True).start()
        wait_until(self._up, timeout=30, what="the web client")

    def _up(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"web client exited with {self.proc.returncode}: {''.join(self.lines)}")
        return httpx.get(self.url + "/", timeout=1).status_code == 200

    def stop(self) -> None:
        stop_process(self.proc)


class WebClientThread:
    """The example web client in this process on uvicorn, so a test can wrap its HTTP transport."""

    def __init__(self, settings: Settings, http: httpx.AsyncClient | None = None) -> None:
        self.url = f"http://127.0.0.1:{settings.port}"
        config = uvicorn.Config(
            create_app(settings, http=http),
            host="127.0.0.1",
            port=settings.port,
            log_level="warning",
            access_log=False,
            lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_until(lambda: self.server.started, what="the in-process web client")

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


__all__ = ["Demo", "WebClientProcess", "WebClientThread", "free_port", "wait_until"]
