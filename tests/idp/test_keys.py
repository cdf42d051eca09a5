"""Signing keys: RS256 ≥ 2048 with kid, encrypted at rest, rotation publishes before signing."""

import threading
import time

import pytest
from joserfc import jwt

from campusid.idp.keys import ACCESS_TOKEN_ALG, ID_TOKEN_ALG, KeyManager, WrongSecretKey
from campusid.idp.store.db import StoreError


def test_private_keys_are_encrypted_at_rest(idp):
    rows = idp.store.keys.all()
    assert {r["alg"] for r in rows} == {"RS256", "ES256"}
    for row in rows:
        assert b"PRIVATE KEY" not in row["private_enc"]
        assert "d" not in row["public_jwk"]
    other = KeyManager(idp.store, "x" * 48, 300, 900)  # the wrong secret key cannot open them
    with pytest.raises(WrongSecretKey, match="not the secret key the keys were created with"):
        other.reload()


def test_rotation_publishes_the_next_key_before_it_signs_and_keeps_the_old(idp, browser):
    keys = idp.ctx.keys
    old_rs = keys.signing_key(ID_TOKEN_ALG).kid
    added = keys.rotate()
    new_kids = {a["kid"] for a in added}
    published = {k["kid"] for k in browser.get("/oauth/jwks").json()["keys"]}
    assert new_kids <= published and old_rs in published
    assert keys.signing_key(ID_TOKEN_ALG).kid == old_rs  # not signing yet
    later = int(time.time()) + idp.settings.jwks_max_age + 1
    assert keys.signing_key(ID_TOKEN_ALG, later).kid in new_kids
    assert keys.signing_key(ACCESS_TOKEN_ALG, later).kid in new_kids
    token = jwt.encode(
        {"alg": "RS256", "kid": keys.signing_key(ID_TOKEN_ALG, later).kid},
        {"a": 1},
        keys.signing_key(ID_TOKEN_ALG, later),
    )
    assert jwt.decode(token, keys.verification_keys()).claims == {"a": 1}


def test_a_rotation_by_another_process_is_in_the_very_next_jwks_answer(idp, browser):
    """`campusid keys rotate` runs in its own process: the running server's next JWKS has the new
    keys (no cache delay), while they do not sign yet."""
    before = {k["kid"] for k in browser.get("/oauth/jwks").json()["keys"]}
    signing = idp.ctx.keys.signing_key(ID_TOKEN_ALG).kid
    added = {a["kid"] for a in _other_manager(idp).rotate()}
    after = {k["kid"] for k in browser.get("/oauth/jwks").json()["keys"]}
    assert added and not added & before
    assert added <= after and before <= after
    assert idp.ctx.keys.signing_key(ID_TOKEN_ALG).kid == signing


def test_old_key_leaves_the_jwks_after_its_tokens_expired(idp, monkeypatch):
    keys = idp.ctx.keys
    old = keys.signing_key(ID_TOKEN_ALG).kid
    keys.rotate()
    far = time.time() + idp.settings.jwks_max_age + idp.settings.max_token_lifetime + 120
    monkeypatch.setattr("campusid.idp.keys.time.time", lambda: far)
    assert old not in {k["kid"] for k in keys.jwks()["keys"]}


def test_cli_keys_rotate(idp_env):
    import json

    from tests.conftest import run_cli

    first = json.loads(run_cli(idp_env, "keys", "list", "--json").stdout)
    out = json.loads(run_cli(idp_env, "keys", "rotate", "--json").stdout)
    assert len(out["added"]) == 2
    kids = {k["kid"] for k in out["keys"]}
    assert {k["kid"] for k in first["keys"]} <= kids
    assert all(k["published"] for k in out["keys"])


@pytest.mark.parametrize("command", [("serve", "--port", "1"), ("keys", "list")])
def test_another_secret_key_is_a_clear_error_not_a_traceback(idp_env, command):
    from tests.conftest import run_cli

    run_cli(idp_env, "keys", "list")  # creates and seals the keys
    proc = run_cli({**idp_env, "CAMPUSID_SECRET_KEY": "y" * 48}, *command, check=False)
    assert proc.returncode == 2
    assert "CAMPUSID_SECRET_KEY does not open the signing key" in proc.stderr
    assert "Traceback" not in proc.stderr and "InvalidTag" not in proc.stderr
    assert idp_env["CAMPUSID_SECRET_KEY"] not in proc.stderr + proc.stdout


def _other_manager(idp) -> KeyManager:
    s = idp.settings
    return KeyManager(idp.store, s.secret_key, s.jwks_max_age, s.max_token_lifetime)


def test_stale_keys_are_read_again_off_the_request_path(idp, monkeypatch):
    """Another process rotated the keys: a request with stale keys goes on with them and the
    database is read on a thread of its own, not the request's."""
    keys = idp.ctx.keys
    kid = keys.signing_key(ID_TOKEN_ALG).kid
    added = {a["kid"] for a in _other_manager(idp).rotate()}
    readers = []
    real_all = idp.store.keys.all
    monkeypatch.setattr(idp.store.keys, "all", lambda: readers.append(threading.current_thread()) or real_all())
    keys._loaded_at = time.monotonic() - 60
    assert keys.signing_key(ID_TOKEN_ALG).kid == kid
    keys.refresher.join(10)
    assert readers and threading.current_thread() not in readers
    assert added <= {k["kid"] for k in keys.jwks()["keys"]}


def test_a_failed_background_reload_keeps_the_keys_and_waits_before_the_next(idp, monkeypatch, caplog):
    keys = idp.ctx.keys
    kid = keys.signing_key(ACCESS_TOKEN_ALG).kid

    def down():
        raise StoreError("the database is unreachable")

    monkeypatch.setattr(idp.store.keys, "all", down)
    keys._loaded_at = time.monotonic() - 60
    assert keys.signing_key(ACCESS_TOKEN_ALG).kid == kid
    first = keys.refresher
    first.join(10)
    assert "reloading the signing keys failed" in caplog.text
    assert keys.signing_key(ACCESS_TOKEN_ALG).kid == kid and keys.verification_key(kid, ACCESS_TOKEN_ALG) is not None
    assert keys.refresher is first  # no new attempt until _RELOAD_SECONDS have passed
