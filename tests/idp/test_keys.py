"""Signing keys: RS256 ≥ 2048 with kid, encrypted at rest, rotation publishes before signing; the
keys in memory are kept fresh by a background task of the app's lifespan, off the request path."""

import logging
import threading
import time

import pytest
from joserfc import jwt

from campusid.idp.keys import ACCESS_TOKEN_ALG, ID_TOKEN_ALG, KeyManager, WrongSecretKey
from campusid.idp.store import StoreUnavailable
from tests.idp.helpers import run


def test_private_keys_are_encrypted_at_rest(idp):
    rows = idp.db.keys.list()
    assert {r.alg for r in rows} == {"RS256", "ES256"}
    for row in rows:
        assert b"PRIVATE KEY" not in row.private_enc
        assert "d" not in row.public_jwk
    other = KeyManager(idp.store, "x" * 48, 300, 900)  # the wrong secret key cannot open them
    with pytest.raises(WrongSecretKey, match="not the secret key the keys were created with"):
        run(idp.store, other.reload())


def test_rotation_publishes_the_next_key_before_it_signs_and_keeps_the_old(idp, browser):
    keys = idp.ctx.keys
    old_rs = keys.signing_key(ID_TOKEN_ALG).kid
    added = run(idp.store, keys.rotate())
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
    assert jwt.decode(token, run(idp.store, keys.verification_keys())).claims == {"a": 1}


def test_a_rotation_by_another_process_is_in_the_very_next_jwks_answer(idp, browser):
    """`campusid keys rotate` runs in its own process: the running server's next JWKS has the new
    keys (no cache delay), while they do not sign yet."""
    before = {k["kid"] for k in browser.get("/oauth/jwks").json()["keys"]}
    signing = idp.ctx.keys.signing_key(ID_TOKEN_ALG).kid
    added = {a["kid"] for a in run(idp.store, _other_manager(idp).rotate())}
    after = {k["kid"] for k in browser.get("/oauth/jwks").json()["keys"]}
    assert added and not added & before
    assert added <= after and before <= after
    assert idp.ctx.keys.signing_key(ID_TOKEN_ALG).kid == signing


def test_old_key_leaves_the_jwks_after_its_tokens_expired(idp, monkeypatch):
    keys = idp.ctx.keys
    old = keys.signing_key(ID_TOKEN_ALG).kid
    run(idp.store, keys.rotate())
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


class KeyReads:
    """Records which asyncio task reads the keys table, and signals each read."""

    def __init__(self, store, monkeypatch, fail: bool = False, then=None) -> None:
        import asyncio

        self.tasks: list[str] = []
        self.done = threading.Event()
        real = store.keys.list

        async def keys():
            self.tasks.append(asyncio.current_task().get_name())
            self.done.set()
            if then is not None:
                then()
            if fail:
                raise StoreUnavailable("the database is unreachable")
            return await real()

        monkeypatch.setattr(store.keys, "list", keys)


def test_stale_keys_are_read_again_off_the_request_path(idp, monkeypatch):
    """Another process rotated the keys: requests go on with the keys in memory (a token exchange
    reads no key), and the lifespan's background task reads them again, not a request's task."""
    from tests.idp.conftest import WEB_REDIRECT
    from tests.idp.helpers import auth_params, code_exchange, login_through_pages

    keys = idp.ctx.keys
    keys.refresh_seconds = 0.05
    added = {a["kid"] for a in run(idp.store, _other_manager(idp).rotate())}
    with idp.client() as browser:  # the lifespan starts the refresher
        reads = KeyReads(idp.store, monkeypatch)
        flow = auth_params(idp.web_id, WEB_REDIRECT)
        code = login_through_pages(browser, idp.issuer, flow, "alice")["code"]
        r = browser.post(
            "/oauth/token", data=code_exchange(flow, code, WEB_REDIRECT), auth=(idp.web_id, idp.web_secret)
        )
        assert r.status_code == 200
        assert reads.done.wait(10), "the background task never read the keys"
        assert set(reads.tasks) == {"campusid-key-refresh"}
        assert added <= {k["kid"] for k in keys.describe()}


def test_a_failed_background_reload_keeps_the_keys_and_waits_before_the_next(idp, monkeypatch, caplog):
    keys = idp.ctx.keys
    kid = keys.signing_key(ACCESS_TOKEN_ALG).kid
    keys.refresh_seconds = 0.05
    caplog.set_level(logging.ERROR, "campusid.idp.keys")
    with idp.client() as browser:

        def wait_long():  # set within the first attempt, so the next one waits this long
            keys.refresh_seconds = 3600

        reads = KeyReads(idp.store, monkeypatch, fail=True, then=wait_long)
        assert reads.done.wait(10)
        discovery = browser.get("/.well-known/openid-configuration")  # the server goes on meanwhile
        assert discovery.status_code == 200
        assert len(reads.tasks) == 1  # no second attempt before refresh_seconds have passed
    assert "reloading the signing keys failed" in caplog.text
    assert keys.signing_key(ACCESS_TOKEN_ALG).kid == kid
    assert run(idp.store, keys.verification_key(kid, ACCESS_TOKEN_ALG)) is not None
