"""`campusid serve --workers 2`: uvicorn's supervisor runs two worker processes of the same app
factory as a single-worker serve, replaces a worker that dies, and on SIGTERM stops them all."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import start_server

pytestmark = pytest.mark.e2e


def workers(pid: int) -> set[int]:
    """The supervisor's worker processes (multiprocessing's spawned children, not its helpers)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue  # gone meanwhile
            if b"spawn_main" in cmdline:
                found.add(int(child))
    return found


def two_workers(supervisor: int, without: int = 0) -> set[int]:
    found = workers(supervisor)
    return found if len(found) == 2 and without not in found else set()


def wait_for(condition, seconds: float = 60.0):
    """Poll `condition` until it returns something truthy (the supervisor checks its workers
    every half second); the value, or None after `seconds`. A request that fails or times out
    meanwhile counts as not yet: on a loaded machine a worker may take seconds to answer."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = condition()
        except httpx.HTTPError:
            value = None
        if value:
            return value
        time.sleep(0.1)
    return None


def test_a_worker_that_dies_is_replaced_and_sigterm_stops_them_all(idp_env):
    server = start_server(idp_env, "--workers", "2")
    try:
        supervisor = server.proc.pid
        first = wait_for(lambda: two_workers(supervisor))
        assert first, f"expected two workers under {supervisor}"
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        replaced = wait_for(lambda: two_workers(supervisor, without=victim))
        assert replaced, "the dead worker was not replaced"
        discovery = f"{server.issuer}/.well-known/openid-configuration"
        assert wait_for(lambda: httpx.get(discovery, timeout=10).status_code == 200)
        for _ in range(20):  # both workers serve (each connection lands on either)
            assert httpx.get(discovery, timeout=30).json()["issuer"] == server.issuer
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(30) == 0
        assert not any(Path(f"/proc/{pid}").exists() for pid in replaced)  # stopped and reaped
    finally:
        server.stop()
