"""A verified access token is not verified again (access_tokens.VerifiedTokens), and nothing
else is skipped: a retired key, expiry, tampering, scope and audience are still judged."""

import time

import pytest

from campusid.idp.keys import ACCESS_TOKEN_ALG
from campusid.idp.protocol import access_tokens, jws
from campusid.idp.protocol.access_tokens import VerifiedTokens, validate
from campusid.idp.protocol.errors import InsufficientScope, InvalidToken


@pytest.fixture
def verifications(monkeypatch):
    """Counts the ES256 signature checks."""
    calls = []
    real = jws.es256_valid

    def counting(key, signing_input, signature):
        calls.append(signing_input)
        return real(key, signing_input, signature)

    monkeypatch.setattr(jws, "es256_valid", counting)
    monkeypatch.setattr(access_tokens, "VERIFIED", VerifiedTokens())
    return calls


def _token(idp, scopes=("openid", "profile")):
    now = int(time.time())
    return idp.ctx.minter.access_token(
        sub="sub-1", client_id=idp.web_id, scopes=list(scopes), auth_time=now, grant_id="g-1", now=now
    )


def test_a_token_presented_again_is_not_verified_again(idp, verifications):
    token = _token(idp)
    first = validate(token, idp.ctx.keys, idp.issuer, idp.issuer, "openid")
    first["scope"] = "mutated by a caller"
    second = validate(token, idp.ctx.keys, idp.issuer, idp.issuer, "openid")
    assert len(verifications) == 1
    assert second["sub"] == "sub-1" and second["scope"] == "openid profile"  # the cached claims stay as verified


def test_every_check_but_the_signature_still_runs_on_a_cached_token(idp, verifications):
    token = _token(idp)
    validate(token, idp.ctx.keys, idp.issuer, idp.issuer, "openid")
    with pytest.raises(InsufficientScope):
        validate(token, idp.ctx.keys, idp.issuer, idp.issuer, "grades.read")
    with pytest.raises(InvalidToken, match="audience"):
        validate(token, idp.ctx.keys, idp.issuer, idp.issuer + "/records", "openid")
    with pytest.raises(InvalidToken, match="another issuer"):
        validate(token, idp.ctx.keys, "https://other.example", idp.issuer, "openid")
    assert len(verifications) == 1


def test_a_tampered_copy_of_a_cached_token_is_verified_and_refused(idp, verifications):
    token = _token(idp)
    validate(token, idp.ctx.keys, idp.issuer, idp.issuer, "openid")
    head, payload, sig = token.split(".")
    forged = f"{head}.{payload}.{sig[:-2]}{'AA' if sig[-2:] != 'AA' else 'BA'}"
    with pytest.raises(InvalidToken, match="signature"):
        validate(forged, idp.ctx.keys, idp.issuer, idp.issuer, "openid")
    assert len(verifications) == 2


def test_a_cached_token_of_a_key_no_longer_published_is_refused(idp, verifications):
    keys = idp.ctx.keys
    token = _token(idp)
    validate(token, keys, idp.issuer, idp.issuer, "openid")
    kid = keys.signing_key(ACCESS_TOKEN_ALG).kid
    keys.rotate()
    idp.store.keys.delete([kid])  # the key is withdrawn (as rotate does with keys past publication)
    keys.reload()
    with pytest.raises(InvalidToken, match="signature"):
        validate(token, keys, idp.issuer, idp.issuer, "openid")
    assert len(access_tokens.VERIFIED) == 0


def test_an_expired_cached_token_is_refused_and_forgotten(idp, verifications, monkeypatch):
    token = _token(idp)
    validate(token, idp.ctx.keys, idp.issuer, idp.issuer, "openid")
    assert len(access_tokens.VERIFIED) == 1
    later = time.time() + idp.settings.access_token_ttl + access_tokens.LEEWAY + 5
    monkeypatch.setattr(access_tokens.time, "time", lambda: later)
    with pytest.raises(InvalidToken, match="expired"):
        validate(token, idp.ctx.keys, idp.issuer, idp.issuer, "openid")
    assert len(access_tokens.VERIFIED) == 0


def test_only_verified_tokens_enter_and_the_oldest_leaves_first(idp, verifications):
    with pytest.raises(InvalidToken):
        validate("e30.e30.AAAA", idp.ctx.keys, idp.issuer, idp.issuer, "openid")
    assert len(access_tokens.VERIFIED) == 0
    kid = idp.ctx.keys.signing_key(ACCESS_TOKEN_ALG).kid  # published, so entries still there answer
    cache = VerifiedTokens(size=2)
    for n in range(3):
        cache.put(f"t{n}", kid, {"n": n})
    assert len(cache) == 2
    assert cache.get("t0", idp.ctx.keys) is None
    assert cache.get("t1", idp.ctx.keys) == {"n": 1} and cache.get("t2", idp.ctx.keys) == {"n": 2}
