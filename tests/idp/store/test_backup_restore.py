"""Backup and restore, with the commands docs/operations.md gives: the database (sqlite3 .backup /
pg_dump) and the secret key; then everything is wiped and restored, and a user still signs in and
a refresh token issued before the backup still refreshes (its ID token verifying against the JWKS:
the signing keys came back and the restored secret key opens them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet

from tests.conftest import active_app, add_users, start_server
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, login_through_pages

REDIRECT = "http://127.0.0.1/callback"


def sh(*args: str) -> None:
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (args, proc.stderr)


def sign_in(server, client_id: str) -> dict:
    with httpx.Client(base_url=server.issuer, timeout=30, follow_redirects=False) as client:
        flow = auth_params(client_id, REDIRECT, scope="openid profile offline_access")
        cb = login_through_pages(client, server.issuer, flow, "alice")
        r = client.post("/oauth/token", data=code_exchange(flow, cb["code"], REDIRECT, client_id))
        assert r.status_code == 200, r.text
        return r.json()


def refresh(server, client_id: str, token: str) -> dict:
    data = {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}
    r = httpx.post(f"{server.issuer}/oauth/token", data=data, timeout=30)
    assert r.status_code == 200, r.text
    body = r.json()
    jwks = KeySet.import_key_set(httpx.get(f"{server.issuer}/oauth/jwks", timeout=30).json())
    jwt.decode(body["id_token"], jwks, algorithms=["RS256"])  # raises if it does not verify
    return body


@pytest.mark.timeout(300)
def test_backup_wipe_restore_then_sign_in_and_refresh(idp_env, tmp_path):
    env = {k: v for k, v in idp_env.items() if k != "CAMPUSID_SECRET_KEY"}  # generated into the data dir
    data_dir = Path(env["CAMPUSID_DATA_DIR"])
    url = env["CAMPUSID_DATABASE_URL"]
    postgres = url.startswith("postgresql")
    add_users(env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
    app = active_app(env, "Kept", "native", REDIRECT, "openid", "profile", "offline_access")
    server = start_server(env)
    try:
        before = sign_in(server, app["client_id"])
    finally:
        server.stop()

    # -- back up: the secret key and the database -------------------------------------------
    backups = tmp_path / "backups"
    backups.mkdir()
    shutil.copy2(data_dir / "secret_key", backups / "secret_key")
    if postgres:
        pg_url = url.replace("postgresql+psycopg://", "postgresql://")
        sh("pg_dump", "--format=custom", f"--file={backups / 'campusid.dump'}", pg_url)
    else:
        db = url.removeprefix("sqlite:///")
        sh("sqlite3", db, f".backup '{backups / 'campusid.db'}'")

    # -- wipe everything ------------------------------------------------------------------------
    shutil.rmtree(data_dir)
    if postgres:
        import psycopg

        base, _, name = pg_url.rpartition("/")
        with psycopg.connect(base + "/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')

    # -- restore --------------------------------------------------------------------------------
    data_dir.mkdir(parents=True)
    shutil.copy2(backups / "secret_key", data_dir / "secret_key")
    (data_dir / "secret_key").chmod(0o600)
    if postgres:
        sh("pg_restore", "--no-owner", f"--dbname={pg_url}", str(backups / "campusid.dump"))
    else:
        sh("sqlite3", db, f".restore '{backups / 'campusid.db'}'")

    server = start_server(env)
    try:
        again = sign_in(server, app["client_id"])  # alice still signs in with her password
        assert again["id_token"]
        refresh(server, app["client_id"], before["refresh_token"])  # a refresh token from before the backup
    finally:
        server.stop()
