"""Signing keys: RS256 ≥ 2048 with kid, encrypted at rest, rotation publishes before signing."""

import time

import pytest
from joserfc import jwt

from campusid.idp.keys import ACCESS_TOKEN_ALG, ID_TOKEN_ALG, KeyManager, WrongSecretKey


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
