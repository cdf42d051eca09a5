"""Automatic signing-key rotation (CAMPUSID_KEY_ROTATION_DAYS): due when the newest key is that old,
published before it signs exactly as `campusid keys rotate`, one worker at a time, a `key_rotated`
event; and under a running server every ID token verifies against the JWKS fetched right after it,
through a rotation by hand and an automatic one."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from joserfc import jwt
from joserfc.jwk import KeySet
from sqlalchemy import text

from campusid.idp import housekeeping
from campusid.idp.store.db import make_engine
from tests.conftest import active_app, add_users, run_cli, start_server
from tests.idp.helpers import PASSWORD, auth_params, code_exchange, login_through_pages, run

DAY = 86400


def age_keys(url: str, seconds: int) -> None:
    """Make every signing key `seconds` older, as if that much time had passed."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("UPDATE signing_keys SET created_at = created_at - :s"), {"s": seconds})
    finally:
        engine.dispose()


def kids(client) -> set[str]:
    return {k["kid"] for k in client.get("/oauth/jwks").json()["keys"]}


def test_rotation_is_due_after_the_set_days_and_done_once(idp, browser):
    settings = idp.settings
    assert settings.key_rotation_days == 90
    before = kids(browser)
    once = lambda: run(idp.store, housekeeping.run_once(idp.store, idp.ctx.keys, idp.ctx.events, settings))  # noqa: E731
    assert once()["rotated"] == []  # the keys are new
    age_keys(settings.database_url, 89 * DAY)
    assert once()["rotated"] == []
    age_keys(settings.database_url, 1 * DAY)
    added = once()["rotated"]
    assert {k["alg"] for k in added} == {"RS256", "ES256"}
    now = time.time()
    assert all(now + settings.jwks_max_age - 5 <= k["signs_from"] <= now + settings.jwks_max_age + 1 for k in added)
    assert kids(browser) == before | {k["kid"] for k in added}  # in the JWKS on the next request
    assert once()["rotated"] == []  # the newest key is new again: nothing more
    rotated = run(idp.store, idp.store.events.list(type="key_rotated"))
    assert len(rotated) == 1 and all(k["kid"] in rotated[0].detail for k in added)
    # 0: only by hand
    age_keys(settings.database_url, 400 * DAY)
    off = settings.with_(key_rotation_days=0)
    assert run(idp.store, housekeeping.run_once(idp.store, idp.ctx.keys, idp.ctx.events, off))["rotated"] == []


def test_rotation_days_zero_and_purge_interval_zero_turn_housekeeping_off(idp):
    assert housekeeping.wanted(idp.settings)
    assert housekeeping.wanted(idp.settings.with_(purge_interval=0))
    assert not housekeeping.wanted(idp.settings.with_(purge_interval=0, key_rotation_days=0))


@pytest.mark.serial
@pytest.mark.timeout(300)
def test_every_id_token_verifies_against_the_jwks_fetched_after_it_through_two_rotations(idp_env):
    env = {
        **idp_env,
        "CAMPUSID_PURGE_INTERVAL": "1",
        "CAMPUSID_JWKS_MAX_AGE": "1",
        "CAMPUSID_KEY_ROTATION_DAYS": "90",
        # one client makes every request: the per-client token budget is not what is under test
        "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "100000/minute",
        "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "100000/hour",
    }
    add_users(env, PASSWORD, ("alice", "student"), ("dev", "developer"), ("admin", "admin"))
    redirect = "http://127.0.0.1/callback"
    app = active_app(env, "Rotating", "native", redirect, "openid", "profile", "offline_access")
    server = start_server(env)
    try:
        with httpx.Client(base_url=server.issuer, timeout=30, follow_redirects=False) as client:
            flow = auth_params(app["client_id"], redirect, scope="openid profile offline_access")
            cb = login_through_pages(client, server.issuer, flow, "alice")
            r = client.post("/oauth/token", data=code_exchange(flow, cb["code"], redirect, app["client_id"]))
            refresh = r.json()["refresh_token"]
            signers: list[str] = []
            failures: list[str] = []
            issued = 0
            by_hand = automatic = False
            started = time.monotonic()
            deadline = started + 120
            while time.monotonic() < deadline:
                r = client.post(
                    "/oauth/token",
                    data={"grant_type": "refresh_token", "refresh_token": refresh, "client_id": app["client_id"]},
                )
                assert r.status_code == 200, r.text
                body = r.json()
                refresh = body["refresh_token"]
                jwks = KeySet.import_key_set(client.get("/oauth/jwks").json())
                issued += 1
                try:
                    token = jwt.decode(body["id_token"], jwks, algorithms=["RS256"])
                    signers.append(token.header["kid"])
                except Exception as exc:  # noqa: BLE001 - collected: the test shows them all
                    failures.append(f"{type(exc).__name__}: {exc}")
                elapsed = time.monotonic() - started
                if not by_hand and elapsed > 1:
                    run_cli(env, "keys", "rotate")
                    by_hand = True
                if by_hand and not automatic and len(set(signers)) >= 2:
                    age_keys(env["CAMPUSID_DATABASE_URL"], 91 * DAY)  # the next housekeeping run rotates
                    automatic = True
                if automatic and len(set(signers)) >= 3:
                    break
            assert failures == [], failures[:3]
            assert len(set(signers)) >= 3, (issued, signers[-5:])  # the first key, then each rotation's
            events = json.loads(run_cli(env, "events", "list", "--type", "key_rotated", "--json").stdout)["events"]
            assert [e["detail"].split(":")[0] for e in events] == ["automatic", "by hand"]
    finally:
        server.stop()


@pytest.mark.serial
@pytest.mark.timeout(300)
def test_two_workers_due_at_once_rotate_once(idp_env):
    env = {**idp_env, "CAMPUSID_PURGE_INTERVAL": "1", "CAMPUSID_KEY_ROTATION_DAYS": "90"}
    server = start_server(env, "--workers", "2")
    try:
        url = env["CAMPUSID_DATABASE_URL"]
        engine = make_engine(url)
        try:
            with engine.connect() as conn:
                assert conn.execute(text("SELECT count(*) FROM signing_keys")).scalar_one() == 2
        finally:
            engine.dispose()
        age_keys(url, 91 * DAY)  # both workers' next runs find the keys due

        def rotations() -> list[dict]:
            out = run_cli(env, "events", "list", "--type", "key_rotated", "--json").stdout
            return json.loads(out)["events"]

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not rotations():
            time.sleep(0.2)
        first = time.monotonic()
        while time.monotonic() < first + 4:  # four more runs of each worker
            time.sleep(0.5)
        assert len(rotations()) == 1
        keys = json.loads(run_cli(env, "keys", "list", "--json").stdout)["keys"]
        assert len(keys) == 4 and sorted(k["alg"] for k in keys) == ["ES256", "ES256", "RS256", "RS256"]
    finally:
        server.stop()
