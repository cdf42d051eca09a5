"""What a management command loads: `campusid users list` opens the store and prints, so it
imports neither the web layer nor the server, Alembic (the database is at the head) or argon2
(no password is hashed). Each command imports what it needs when it runs; an import at the top
of any module of campusid.cli would load it for every command."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import run_cli

NOT_FOR_USERS_LIST = (
    "campusid.idp.web",
    "campusid.idp.app",
    "campusid.idp.api.routes",
    "campusid.idp.admin.routes",
    "campusid.idp.portal.routes",
    "campusid.idp.demo",
    "starlette",
    "fastapi",
    "uvicorn",
    "jinja2",
    "alembic",
    "argon2",
    "ldap",
)

_USERS_LIST = """
import json, sys
sys.argv = ["campusid", "users", "list", "--json"]
from campusid.cli import main
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
print(json.dumps(sorted(sys.modules)))
"""


def test_users_list_imports_no_web_layer_server_or_hashing(idp_env):
    run_cli(idp_env, "db", "upgrade")  # at the head, as a deployed database is
    env = {**os.environ, **idp_env}
    proc = subprocess.run([sys.executable, "-c", _USERS_LIST], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed, modules = proc.stdout.strip().splitlines()[-2:]
    assert json.loads(listed) == {"users": []}
    loaded = [m for m in json.loads(modules) if m.split(".")[0] != "campusid" or "." in m]
    assert "campusid.cli.users" in loaded and "campusid.idp.store" in loaded  # it did run
    assert [m for m in loaded if any(m == n or m.startswith(n + ".") for n in NOT_FOR_USERS_LIST)] == []
