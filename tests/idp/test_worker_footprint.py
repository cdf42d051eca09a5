"""What a server worker holds after start (bench/README.md, "After phase 2"): the libraries only
some requests need are imported at their first use, and `campusid serve` computes no argon2id
hash before it builds the app (the hash's freed 19 MiB raised glibc's mmap threshold, and the
server kept ~20 MB more heap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

# ~21 MB of a worker's memory together, used only by the passkey pages (py_webauthn with cbor2,
# pyOpenSSL, pyasn1), back-channel logout POSTs (httpx), TOTP enrolment's QR code (segno); and
# sqlalchemy.orm, which the store never needs (Core's Table.alias does what aliased() did).
LAZY = ("webauthn", "httpx", "segno", "sqlalchemy.orm", "OpenSSL", "cbor2")

_STARTED_WORKER = """
import json, sys
from campusid.idp.asgi import app_factory
app_factory()
print(json.dumps(sorted(m for m in sys.modules)))
"""

_SERVE_START = """
import argon2, json, sys
hashed = []
real = argon2.PasswordHasher.hash
argon2.PasswordHasher.hash = lambda self, p, **kw: hashed.append(1) or real(self, p, **kw)
from campusid.cli.common import Services, loaded_keys
svc = Services(8000)
svc.run(loaded_keys)
print(json.dumps(len(hashed)))
"""


def _run(code: str, idp_env: dict) -> object:
    env = {**os.environ, **idp_env, "CAMPUSID_ISSUER": "http://127.0.0.1:8000"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_started_worker_has_not_imported_what_only_some_requests_need(idp_env):
    modules = set(_run(_STARTED_WORKER, idp_env))
    assert "campusid.idp.app" in modules  # the app was built
    assert [m for m in LAZY if m in modules] == []


def test_serve_hashes_no_password_before_it_serves(idp_env):
    # `serve` opens the store and loads the keys through Services; only commands that hash or
    # check a password make its Passwords (whose timing dummy is an argon2id hash)
    assert _run(_SERVE_START, idp_env) == 0
