"""/readyz of a real `campusid serve` on a PostgreSQL cluster of the test's own (initdb and pg_ctl
on a spare port under a temporary directory, never the shared server): 503 naming `database`
while PostgreSQL is stopped, 200 again once it is back, without restarting campusid."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time

import httpx
import pytest

from tests.conftest import free_port, start_server

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
BINDIR = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1] if glob.glob("/usr/lib/postgresql/*/bin") else None


class Cluster:
    """A throwaway PostgreSQL cluster; run as the `postgres` account when the test runs as root
    (initdb refuses root)."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="campusid-pg-")
        self.port = free_port()
        self.user = None
        if os.geteuid() == 0:
            self.user = pwd.getpwnam("postgres")
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self.data = os.path.join(self.dir, "data")
        self._run("initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "--no-sync")

    def _run(self, tool: str, *args: str) -> None:
        command = [os.path.join(BINDIR, tool), *args]
        if self.user is not None:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", self.data, "-o", options, "-l", os.path.join(self.dir, "log"), "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def poll(url: str, wanted: int, seconds: float = 60.0) -> httpx.Response:
    """GET `url` until it answers `wanted` (the last answer otherwise)."""
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            last = httpx.get(url, timeout=15)
            if last.status_code == wanted:
                return last
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return last


@pytest.mark.skipif(BINDIR is None, reason="PostgreSQL's server binaries are not installed")
def test_readyz_names_the_database_while_postgres_is_stopped_and_recovers_by_itself(idp_env):
    cluster = Cluster()
    try:
        cluster.start()
        env = {**idp_env, "CAMPUSID_DATABASE_URL": cluster.url}
        server = start_server(env)
        try:
            ready = f"{server.issuer}/readyz"
            r = httpx.get(ready, timeout=15)
            assert r.status_code == 200, r.text
            assert r.json()["checks"] == {"database": "ok", "keys": "ok", "redis": "not_configured"}
            cluster.stop()
            started = time.monotonic()
            r = poll(ready, 503)
            assert r is not None and r.status_code == 503, r and r.text
            assert time.monotonic() - started < 30
            body = r.json()
            assert body["status"] == "not_ready" and body["checks"]["database"] in ("unreachable", "timeout")
            assert body["checks"]["keys"] == "ok" and body["checks"]["redis"] == "not_configured"
            assert str(cluster.port) not in r.text and "postgres" not in r.text.lower()  # no address, no error text
            assert httpx.get(f"{server.issuer}/healthz", timeout=15).json() == {"status": "ok"}  # touches nothing
            cluster.start()
            r = poll(ready, 200)
            assert r is not None and r.status_code == 200, r and r.text
            assert r.json() == {
                "status": "ready",
                "checks": {"database": "ok", "keys": "ok", "redis": "not_configured"},
            }
            assert server.proc.poll() is None  # the same process all along
        finally:
            server.stop()
    finally:
        cluster.remove()


def test_readyz_answers_503_quickly_when_the_database_hangs(idp_env, tmp_path):
    """A database that accepts connections and never answers (a socket nobody reads): the check's
    timeout answers for it."""
    import socket
    import threading

    cluster = Cluster()
    try:
        cluster.start()
        env = {**idp_env, "CAMPUSID_DATABASE_URL": cluster.url}
        server = start_server(env)
        try:
            cluster.stop()
            hung = socket.socket()
            hung.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            hung.bind(("127.0.0.1", cluster.port))  # the same address, now a listener that never answers
            hung.listen(64)
            stop = threading.Event()
            held = []

            def accept():
                hung.settimeout(0.2)
                while not stop.is_set():
                    with contextlib.suppress(OSError):
                        held.append(hung.accept()[0])

            thread = threading.Thread(target=accept, daemon=True)
            thread.start()
            try:
                r = poll(f"{server.issuer}/readyz", 503)
                assert r is not None and r.status_code == 503
                started = time.monotonic()
                r = httpx.get(f"{server.issuer}/readyz", timeout=30)
                took = time.monotonic() - started
                assert r.status_code == 503 and r.json()["checks"]["database"] in ("timeout", "unreachable")
                assert took < 10, took
            finally:
                stop.set()
                thread.join(5)
                for conn in held:
                    conn.close()
                hung.close()
        finally:
            server.stop()
    finally:
        cluster.remove()
