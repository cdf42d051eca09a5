"""Migration 0012 (the app apart from its OIDC registration) on a database the release before wrote:
schema 0011 with apps, users, sessions, grants, a refresh token and a consent in it. After
`campusid db upgrade` the same people sign in to the same apps with the same secrets: a browser's
session and its remembered consent answer an authorization request at once, the web app's secret
still authenticates it, and the refresh token issued before the upgrade still refreshes."""

from __future__ import annotations

import json
import time
from urllib.parse import urlencode

from alembic import command
from alembic.config import Config
from sqlalchemy import MetaData, inspect, select
from starlette.testclient import TestClient

from campusid.idp.app import create_app
from campusid.idp.crypto import new_token, token_hash
from campusid.idp.passwords import Passwords
from campusid.idp.settings import load_settings
from campusid.idp.store.db import MIGRATIONS, make_engine, schema_head, upgrade
from tests.idp.helpers import PASSWORD, auth_params, callback_params, code_exchange

ISSUER = "http://127.0.0.1:8000"
WEB_REDIRECT = "https://grades.example.edu/callback"
NATIVE_REDIRECT = "http://127.0.0.1/callback"
MOVED = (
    "secret_hash",
    "redirect_uris",
    "sector_identifier_uri",
    "grant_types",
    "granted_grant_types",
    "post_logout_redirect_uris",
    "backchannel_logout_uri",
)


def _the_release_before(url: str, passwords: Passwords) -> dict:
    """A database at schema 0011 with what that release wrote: two users, a web app (secret, a
    back-channel logout URI) and a native app with the device grant, alice's session and her
    consent to the web app, and a grant of the native app with a live refresh token."""
    engine = make_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    now = int(time.time())
    web_secret, refresh, session_id = new_token(32), new_token(32), new_token(32)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0011")
        t = MetaData()
        t.reflect(conn)
        assert "oidc_registrations" not in t.tables and "redirect_uris" in t.tables["clients"].c
        conn.execute(
            t.tables["users"].insert(),
            [
                {
                    "id": "u-alice",
                    "username": "alice",
                    "name": "Alice Zhang",
                    "role": "student",
                    "student_number": "2024001",
                    "password_hash": passwords.hash(PASSWORD),
                    "created_at": now,
                },
                {
                    "id": "u-dev",
                    "username": "dev",
                    "student_number": None,
                    "name": "Dev",
                    "role": "developer",
                    "password_hash": passwords.hash(PASSWORD),
                    "created_at": now,
                },
            ],
        )
        app = {
            "description": "",
            "state": "active",
            "justifications": {},
            "revision": None,
            "revision_state": None,
            "owner_id": "u-dev",
            "created_at": now,
            "updated_at": now,
            "require_mfa": False,
        }
        conn.execute(
            t.tables["clients"].insert(),
            [
                {
                    **app,
                    "client_id": "grades-web",
                    "name": "Grades",
                    "type": "web",
                    "secret_hash": token_hash(web_secret),
                    "redirect_uris": [WEB_REDIRECT],
                    "scopes": ["openid", "profile"],
                    "granted_scopes": ["openid", "profile"],
                    "sector_identifier_uri": None,
                    "grant_types": [],
                    "granted_grant_types": [],
                    "post_logout_redirect_uris": ["https://grades.example.edu/"],
                    "backchannel_logout_uri": "https://grades.example.edu/bcl",
                },
                {
                    **app,
                    "client_id": "lab-desktop",
                    "name": "Lab",
                    "type": "native",
                    "secret_hash": None,
                    "redirect_uris": [NATIVE_REDIRECT],
                    "scopes": ["openid", "offline_access"],
                    "granted_scopes": ["openid", "offline_access"],
                    "sector_identifier_uri": None,
                    "grant_types": ["device_code"],
                    "granted_grant_types": ["device_code"],
                    "post_logout_redirect_uris": [],
                    "backchannel_logout_uri": None,
                },
            ],
        )
        conn.execute(
            t.tables["client_events"].insert(),
            [
                {"client_id": c, "actor": "dev", "action": "create", "from_state": None, "to_state": "draft", "at": now}
                for c in ("grades-web", "lab-desktop")
            ],
        )
        conn.execute(
            t.tables["sessions"].insert(),
            {
                "id_hash": token_hash(session_id),
                "user_id": "u-alice",
                "auth_time": now,
                "created_at": now,
                "expires_at": now + 3600,
                "sid": "sid-before",
                "amr": "pwd",
                "acr": "urn:campusid:acr:pwd",
            },
        )
        conn.execute(
            t.tables["consents"].insert(),
            {"user_id": "u-alice", "client_id": "grades-web", "scope": "openid profile", "updated_at": now},
        )
        conn.execute(
            t.tables["grants"].insert(),
            {
                "id": "g-before",
                "code_hash": None,
                "client_id": "lab-desktop",
                "user_id": "u-alice",
                "redirect_uri": NATIVE_REDIRECT,
                "code_challenge": "x",
                "nonce": None,
                "scope": "openid offline_access",
                "auth_time": now,
                "created_at": now,
                "code_expires_at": now,
                "code_used_at": now,
                "revoked_at": None,
                "sid": "sid-before",
                "amr": "pwd",
                "acr": "urn:campusid:acr:pwd",
            },
        )
        conn.execute(
            t.tables["refresh_tokens"].insert(),
            {
                "token_hash": token_hash(refresh),
                "grant_id": "g-before",
                "created_at": now,
                "expires_at": now + 86400,
                "used_at": None,
            },
        )
    engine.dispose()
    return {"web_secret": web_secret, "refresh": refresh, "session": session_id}


def test_a_database_of_the_release_before_upgrades_and_is_signed_in_through(idp_env, tmp_path):
    env = {**idp_env, "CAMPUSID_ISSUER": ISSUER}
    settings = load_settings(env)
    before = _the_release_before(settings.database_url, Passwords(1, 8192, 1))

    engine = make_engine(settings.database_url)
    try:
        assert upgrade(engine, settings.data_dir) == schema_head()
        with engine.connect() as conn:
            assert not {c["name"] for c in inspect(conn).get_columns("clients")} & set(MOVED)
            t = MetaData()
            t.reflect(conn, only=["oidc_registrations"])
            moved = {r.client_id: r for r in conn.execute(select(t.tables["oidc_registrations"]))}
    finally:
        engine.dispose()
    assert set(moved) == {"grades-web", "lab-desktop"}
    assert moved["grades-web"].secret_hash == token_hash(before["web_secret"])
    assert _json(moved["grades-web"].redirect_uris) == [WEB_REDIRECT]
    assert moved["grades-web"].backchannel_logout_uri == "https://grades.example.edu/bcl"
    assert _json(moved["lab-desktop"].granted_grant_types) == ["device_code"]

    app = create_app(settings)
    try:
        with TestClient(app, base_url=ISSUER, follow_redirects=False) as browser:
            shown = browser.get("/developer")  # nothing to check there: the app must start at all
            assert shown.status_code in (200, 303)
            # alice's session and her consent from before: a code at once, then the web app's old secret
            browser.cookies.set("campusid_session", before["session"])
            flow = auth_params("grades-web", WEB_REDIRECT, scope="openid profile")
            r = browser.get(f"/oauth/authorize?{urlencode(flow.params)}")
            assert r.status_code == 303, r.text[:300]
            code = callback_params(r.headers["location"])["code"]
            tokens = browser.post(
                "/oauth/token", data=code_exchange(flow, code, WEB_REDIRECT), auth=("grades-web", before["web_secret"])
            )
            assert tokens.status_code == 200, tokens.text
            info = browser.get("/oauth/userinfo", headers={"Authorization": f"Bearer {tokens.json()['access_token']}"})
            assert info.json()["name"] == "Alice Zhang"
            # the native app's refresh token, issued before the upgrade
            refreshed = browser.post(
                "/oauth/token",
                data={"grant_type": "refresh_token", "refresh_token": before["refresh"], "client_id": "lab-desktop"},
            )
            assert refreshed.status_code == 200, refreshed.text
            # and a new sign-in with the password, through the login page
            browser.cookies.clear()
            flow = auth_params("lab-desktop", NATIVE_REDIRECT, scope="openid offline_access")
            page = browser.get(f"/oauth/authorize?{urlencode(flow.params)}")
            csrf = page.text.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
            r = browser.post("/login", data={"csrf_token": csrf, "username": "alice", "password": PASSWORD})
            assert r.status_code == 303
            assert r.headers["location"].startswith("/consent?interaction=")  # a new consent for the native app
    finally:
        app.state.ctx.store.close()


def _json(value):
    return json.loads(value) if isinstance(value, str) else value


def test_migration_0012_downgrades_with_the_registrations_back_in_clients(idp_env):
    settings = load_settings({**idp_env, "CAMPUSID_ISSUER": ISSUER})
    before = _the_release_before(settings.database_url, Passwords(1, 8192, 1))
    engine = make_engine(settings.database_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0012")
            command.downgrade(cfg, "0011")
            t = MetaData()
            t.reflect(conn, only=["clients"])
            rows = {r.client_id: r for r in conn.execute(select(t.tables["clients"]))}
            assert "oidc_registrations" not in inspect(conn).get_table_names()
    finally:
        engine.dispose()
    assert rows["grades-web"].secret_hash == token_hash(before["web_secret"])
    assert _json(rows["grades-web"].post_logout_redirect_uris) == ["https://grades.example.edu/"]
    assert _json(rows["lab-desktop"].grant_types) == ["device_code"]
