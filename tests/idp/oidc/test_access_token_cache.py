"""A verified access token is not verified again (the validator's VerifiedTokens, one per app),
and nothing else is skipped: a retired key, expiry, tampering, scope and audience are still
judged."""

import asyncio
import time

import pytest

from campusid.idp.app import create_app
from campusid.idp.keys import ACCESS_TOKEN_ALG
from campusid.idp.oidc.errors import InsufficientScope, InvalidToken
from campusid.idp.oidc.rules import access_tokens, jws
from campusid.idp.oidc.rules.access_tokens import VerifiedTokens
from tests.idp.helpers import run


@pytest.fixture
def verifications(monkeypatch):
    """Counts the ES256 signature checks."""
    calls = []
    real = jws.es256_valid

    def counting(key, signing_input, signature):
        calls.append(signing_input)
        return real(key, signing_input, signature)

    monkeypatch.setattr(jws, "es256_valid", counting)
    return calls


def _token(idp, scopes=("openid", "profile")):
    run(idp.store, idp.ctx.keys.ready())
    now = int(time.time())
    return idp.ctx.faces["oidc"].minter.access_token(
        sub="sub-1", client_id=idp.web_id, scopes=list(scopes), auth_time=now, grant_id="g-1", now=now
    )


def validate(idp, token, audience=None, scope="openid", validator=None):
    validator = validator or idp.ctx.faces["oidc"].validator
    return run(idp.store, validator.validate(token, audience or idp.issuer, scope))


def test_a_token_presented_again_is_not_verified_again(idp, verifications):
    token = _token(idp)
    first = validate(idp, token)
    first["scope"] = "mutated by a caller"
    second = validate(idp, token)
    assert len(verifications) == 1
    assert second["sub"] == "sub-1" and second["scope"] == "openid profile"  # the cached claims stay as verified


def test_every_check_but_the_signature_still_runs_on_a_cached_token(idp, verifications):
    token = _token(idp)
    validate(idp, token)
    with pytest.raises(InsufficientScope):
        validate(idp, token, scope="grades.read")
    with pytest.raises(InvalidToken, match="audience"):
        validate(idp, token, audience=idp.issuer + "/records")
    other_issuer = access_tokens.AccessTokenValidator(idp.ctx.keys, idp.store, "https://other.example")
    other_issuer.verified = idp.ctx.faces["oidc"].validator.verified  # the same cache, another issuer's checks
    with pytest.raises(InvalidToken, match="another issuer"):
        validate(idp, token, validator=other_issuer)
    assert len(verifications) == 1


def test_a_tampered_copy_of_a_cached_token_is_verified_and_refused(idp, verifications):
    token = _token(idp)
    validate(idp, token)
    head, payload, sig = token.split(".")
    forged = f"{head}.{payload}.{sig[:-2]}{'AA' if sig[-2:] != 'AA' else 'BA'}"
    with pytest.raises(InvalidToken, match="signature"):
        validate(idp, forged)
    assert len(verifications) == 2


def test_a_cached_token_of_a_key_no_longer_published_is_refused(idp, verifications):
    keys = idp.ctx.keys
    token = _token(idp)
    validate(idp, token)
    kid = keys.signing_key(ACCESS_TOKEN_ALG).kid
    run(idp.store, keys.rotate())
    idp.db.keys.delete([kid])  # the key is withdrawn (as rotate does with keys past publication)
    run(idp.store, keys.reload())
    with pytest.raises(InvalidToken, match="signature"):
        validate(idp, token)
    assert len(idp.ctx.faces["oidc"].validator.verified) == 0


def test_an_expired_cached_token_is_refused_and_forgotten(idp, verifications, monkeypatch):
    token = _token(idp)
    validate(idp, token)
    assert len(idp.ctx.faces["oidc"].validator.verified) == 1
    later = time.time() + idp.settings.access_token_ttl + access_tokens.LEEWAY + 5
    monkeypatch.setattr(access_tokens.time, "time", lambda: later)
    with pytest.raises(InvalidToken, match="expired"):
        validate(idp, token)
    assert len(idp.ctx.faces["oidc"].validator.verified) == 0


def test_only_verified_tokens_enter_and_the_oldest_leaves_first(idp, verifications):
    with pytest.raises(InvalidToken):
        validate(idp, "e30.e30.AAAA")
    assert len(idp.ctx.faces["oidc"].validator.verified) == 0
    kid = idp.ctx.keys.signing_key(ACCESS_TOKEN_ALG).kid  # published, so entries still there answer
    cache = VerifiedTokens(size=2)
    for n in range(3):
        cache.put(f"t{n}", kid, {"n": n})
    assert len(cache) == 2
    assert cache.get("t0", idp.ctx.keys) is None
    assert cache.get("t1", idp.ctx.keys) == {"n": 1} and cache.get("t2", idp.ctx.keys) == {"n": 2}


def test_each_app_has_its_own_cache(idp, verifications):
    """Two apps in one process (tests, or an IdP beside another service) never share verified
    tokens: a token verified by one app is verified again by the other."""
    token = _token(idp)
    validate(idp, token)
    other = create_app(idp.settings, store=idp.store)
    other_validator = other.state.ctx.faces["oidc"].validator
    assert other_validator.verified is not idp.ctx.faces["oidc"].validator.verified
    claims = asyncio.run(other_validator.validate(token, idp.issuer, "openid"))
    assert claims["sub"] == "sub-1" and len(verifications) == 2
