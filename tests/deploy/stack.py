"""The deployment as it would run (docs/deployment.md), for tests/deploy and the long fuzz run
(tests/fuzz/long_run.py): Debian's nginx with deploy/nginx/campusid.conf terminating TLS (a
certificate from a CA the test makes) in front of the command line of deploy/systemd/campusid.service
— `campusid serve --workers 2` — with the example environment file's settings
(CAMPUSID_TRUSTED_PROXIES among them), on PostgreSQL and a Redis of its own. Only ports, paths,
secrets and the settings the caller passes are the test's."""

from __future__ import annotations

import contextlib
import os
import secrets
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.conftest import free_port, stop_process
from tests.services import (
    Nginx,
    Redis,
    create_database,
    drop_database,
    make_tls,
    unit_commands,
    unit_environment,
    wait_port,
)


@dataclass
class Stack:
    issuer: str
    env: dict[str, str]  # the unit's environment, for the `campusid` command line
    ca: Path
    server: subprocess.Popen
    nginx: Nginx
    server_log: Path  # the server's stderr

    def log(self) -> str:
        return self.server_log.read_text(errors="replace")


@contextlib.contextmanager
def behind_nginx(tmp_path: Path, settings: dict[str, str], access_format: str = "") -> Iterator[Stack]:
    """nginx → campusid serve --workers 2 → PostgreSQL + Redis, with `settings` added to the
    unit's environment. Stops everything on the way out."""
    redis = Redis()
    database = create_database()
    app_port = free_port()
    tls = make_tls(tmp_path / "tls")
    nginx = Nginx(tmp_path / "nginx", app_port, tls, access_format)
    issuer = f"https://127.0.0.1:{nginx.port}"
    unit_env = unit_environment(
        {
            "CAMPUSID_BIN": str(Path(sys.executable).parent),
            "CAMPUSID_PORT": str(app_port),
            "CAMPUSID_DATA_DIR": str(tmp_path / "data"),
            "CAMPUSID_ISSUER": issuer,
            "CAMPUSID_DATABASE_URL": database,
            "CAMPUSID_REDIS_URL": redis.url,
            "CAMPUSID_SECRET_KEY": secrets.token_urlsafe(48),
        }
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAMPUSID_")}
    env.update(unit_env)
    env.update(settings)
    *before, serve = unit_commands(unit_env)
    assert serve[serve.index("--workers") + 1] == "2"
    for command in before:
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)
    log_path = tmp_path / "campusid.log"
    with log_path.open("wb") as log_file:  # a file, not a pipe: a long run must never block on it
        server = subprocess.Popen(serve, env=env, stdout=subprocess.DEVNULL, stderr=log_file)
    stack = Stack(issuer, env, tls["ca"], server, nginx, log_path)
    try:
        wait_port(app_port, 60, proc=server)  # then nginx's first request finds it
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, stack.log()
            try:
                discovery = f"{issuer}/.well-known/openid-configuration"
                if httpx.get(discovery, verify=ssl.create_default_context(cafile=str(tls["ca"])), timeout=2).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "campusid behind nginx did not answer within 60 s"
            time.sleep(0.1)
        yield stack
    finally:
        stop_process(server, 30)
        nginx.stop()
        redis.stop()
        drop_database(database)
