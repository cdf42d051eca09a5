"""Shared fixtures. The backend follows CAMPUSID_DATABASE_URL: unset → a fresh SQLite file per
test; a postgresql URL → a fresh database per test on that server (CI runs the suite both ways)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_admin_url(url: str) -> tuple[str, str]:
    base, _, _db = url.rpartition("/")
    return base, base + "/postgres"


@contextmanager
def fresh_database(tmp: Path) -> Iterator[str]:
    """A database of its own, on the backend CAMPUSID_DATABASE_URL names: unset, a new SQLite file in
    `tmp`; a postgresql URL, a new database on that server, dropped afterwards."""
    url = os.environ.get("CAMPUSID_DATABASE_URL", "")
    if not url.startswith(("postgresql", "postgres")):
        yield f"sqlite:///{tmp / 'campusid.db'}"
        return
    import psycopg

    base, admin = _pg_admin_url(url.replace("postgresql+psycopg://", "postgresql://"))
    name = f"campusid_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgresql+psycopg://{base.split('://', 1)[1]}/{name}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def isolated_env(tmp: Path, database_url: str) -> dict[str, str]:
    """Environment for one isolated IdP: a fresh data dir in `tmp`, `database_url`, a new secret key,
    cheap argon2 parameters and no second factor asked of anyone."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPUSID_")}
    env.update(
        {
            "CAMPUSID_DATA_DIR": str(tmp / "data"),
            "CAMPUSID_DATABASE_URL": database_url,
            "CAMPUSID_SECRET_KEY": secrets.token_urlsafe(48),
            "CAMPUSID_ARGON2_MEMORY_COST": "8192",
            "CAMPUSID_ARGON2_TIME_COST": "1",
            # The suite signs admins in with a password; the second-factor tests (tests/idp/signin/,
            # tests/idp/accounts/test_account.py) turn the policy on.
            "CAMPUSID_MFA_REQUIRED_ROLES": "",
        }
    )
    return env


@pytest.fixture
def database_url(tmp_path):
    with fresh_database(tmp_path) as url:
        yield url


@pytest.fixture
def idp_env(tmp_path, database_url) -> dict[str, str]:
    """Environment for one isolated IdP (a fresh data dir and database)."""
    return isolated_env(tmp_path, database_url)


def run_cli(env: dict, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [str(BIN / "campusid"), *args], env=env, input=stdin, capture_output=True, text=True, timeout=60
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"campusid {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def add_users(env: dict, password: str, *users: tuple[str, str]) -> None:
    """`campusid users add` for each (username, role), named after the username."""
    for name, role in users:
        run_cli(
            env, "users", "add", name, "--name", name.title(), "--role", role, "--password-stdin", stdin=password + "\n"
        )


def active_app(env: dict, name: str, kind: str, redirect_uri: str, *scopes: str, owner: str = "dev") -> dict:
    """A client application created through the CLI and taken through review to active; its JSON."""
    args = ["apps", "create", "--name", name, "--type", kind, "--redirect-uri", redirect_uri]
    for scope in scopes:
        args += ["--scope", scope]
    app = json.loads(run_cli(env, *args, "--owner", owner, "--json").stdout)
    for step in (["submit"], ["approve", "--by", "admin"], ["activate"]):
        run_cli(env, "apps", step[0], app["client_id"], *step[1:])
    return app


class Server:
    def __init__(self, proc: subprocess.Popen, issuer: str, env: dict) -> None:
        self.proc, self.issuer, self.env = proc, issuer, env

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen, timeout: float = 10) -> None:
    """End a process the test started: SIGTERM, and SIGKILL if it is still there after `timeout` s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout)


def start_server(
    env: dict, *args: str, port: int | None = None, command: str = "serve", cpus: set[int] | None = None
) -> Server:
    """Start `campusid serve` (or demo) as a real process and wait until discovery answers;
    `cpus`: the only CPUs it may run on."""
    port = port or free_port()
    issuer = env.get("CAMPUSID_ISSUER") or f"http://127.0.0.1:{port}"
    env = {**env, "CAMPUSID_ISSUER": issuer}
    proc = subprocess.Popen(
        [str(BIN / "campusid"), command, "--port", str(port), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/.well-known/openid-configuration", timeout=1).status_code == 200:
                return Server(proc, issuer, env)
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("server did not start within 30 s")


# -- Redis and Chromium -------------------------------------------------------------------------
REDIS_URL = os.environ.get("CAMPUSID_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def redis_client():
    """A client of the suite's Redis (CAMPUSID_TEST_REDIS_URL); the test is skipped where none answers."""
    redis = pytest.importorskip("redis")
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError:
        pytest.skip(f"no Redis at {REDIS_URL}")
    return client


CHROMIUM = "/usr/bin/chromium"  # Debian's; Playwright drives it, it downloads no browser of its own
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture
def chromium():
    """Headless Chromium through Playwright's sync API, for one test; skipped where either is missing.
    (While it runs, so does Playwright's event loop: tests/idp/helpers.run copes with that.)"""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# -- the PostgreSQL pass ------------------------------------------------------------------------
# `make test` runs the suite on SQLite, then again with CAMPUSID_DATABASE_URL on PostgreSQL, to prove
# every path of the IdP's store on both. These tests do not depend on which database the IdP uses, so
# the second pass leaves them out (a new directory runs in both passes until it is named here):
# - the desktop app, its GUI and bridge SDK, the chat-bot example and the RP library talk HTTP to an
#   IdP; what they check is theirs, not the IdP's storage (tests/idp and tests/e2e cover that);
# - tests/deploy and the long fuzz run's short pass always run on PostgreSQL and Redis (tests/deploy/stack.py);
# - the installed wheel's smokes and the text checks read files (the catalogues and their check too).
NOT_DATABASE_BOUND = (
    "tests/desktop/",
    "tests/desktop_gui/",
    "tests/bridge_client/",
    "tests/examples_chat_bot/",
    "tests/oidc_client/",
    "tests/deploy/",
    "tests/fuzz/test_long_run.py",
    "tests/fuzz/bridge/",
    "tests/packaging/",
    "tests/test_issuer.py",
    "tests/test_user_facing_text.py",
    "tests/test_screenshots.py",
    # real CAS clients (mod_auth_cas, python-cas, phpCAS) talking HTTP to a served IdP: their interop
    # is theirs; the CAS face's storage is covered by tests/idp/cas and test_e2e_cas_two_workers.py
    "tests/e2e/test_e2e_cas_clients.py",
    "tests/i18n/",
    "tests/scripts/",
)


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("CAMPUSID_DATABASE_URL", "").startswith("postgres"):
        return
    root = Path(__file__).resolve().parent.parent
    keep, left_out = [], []
    for item in items:
        where = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        (left_out if where.startswith(NOT_DATABASE_BOUND) else keep).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = keep
