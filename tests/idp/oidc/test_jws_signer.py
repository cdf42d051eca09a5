"""Our JWS compact signer (RFC 7515 7.1, RFC 7518 3.3/3.4) against joserfc's verification."""

import base64
import json
import time

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from joserfc import jws
from joserfc.errors import BadSignatureError
from joserfc.jwk import ECKey, RSAKey

from campusid.idp.keys import ACCESS_TOKEN_ALG, ID_TOKEN_ALG
from campusid.idp.oidc.rules.jws import CompactSigner, es256_valid, split_compact
from tests.idp.helpers import run


def _part(token: str, index: int) -> bytes:
    seg = token.split(".")[index]
    return base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4))


@pytest.mark.parametrize(
    ("alg", "key"),
    [
        ("RS256", RSAKey.generate_key(2048, private=True)),
        ("ES256", ECKey.generate_key("P-256", private=True)),
    ],
)
def test_tokens_verify_with_joserfc_and_carry_the_header_and_claims(alg, key):
    header = {"alg": alg, "kid": "k-1", "typ": "JWT"}
    claims = {"iss": "https://idp.example", "sub": "s", "name": "Zoë Ångström", "exp": 2_000_000_000}
    token = CompactSigner(alg, key, header).sign(claims)
    assert token.count(".") == 2 and "=" not in token
    assert json.loads(_part(token, 0)) == header
    verified = jws.deserialize_compact(token, key, algorithms=[alg])
    assert json.loads(verified.payload) == claims
    if alg == "ES256":
        assert len(_part(token, 2)) == 64  # R || S, not DER (RFC 7518 3.4)


@pytest.mark.parametrize(
    ("alg", "key"),
    [
        ("RS256", RSAKey.generate_key(2048, private=True)),
        ("ES256", ECKey.generate_key("P-256", private=True)),
    ],
)
def test_a_changed_signature_or_payload_does_not_verify(alg, key):
    token = CompactSigner(alg, key, {"alg": alg}).sign({"sub": "a"})
    head, payload, sig = token.split(".")
    other_payload = base64.urlsafe_b64encode(b'{"sub":"b"}').rstrip(b"=").decode()
    flipped = bytearray(_part(token, 2))
    flipped[5] ^= 1
    bad_sig = base64.urlsafe_b64encode(bytes(flipped)).rstrip(b"=").decode()
    for forged in (f"{head}.{other_payload}.{sig}", f"{head}.{payload}.{bad_sig}"):
        with pytest.raises(BadSignatureError):
            jws.deserialize_compact(forged, key, algorithms=[alg])


def test_keys_that_do_not_fit_the_algorithm_are_refused():
    rsa_2048 = RSAKey.generate_key(2048, private=True)
    p256 = ECKey.generate_key("P-256", private=True)
    with pytest.raises(ValueError, match="EC private key"):
        CompactSigner("ES256", rsa_2048, {"alg": "ES256"})
    with pytest.raises(ValueError, match="RSA private key"):
        CompactSigner("RS256", p256, {"alg": "RS256"})
    with pytest.raises(ValueError, match="cannot sign with this key"):
        CompactSigner("ES256", ECKey.generate_key("P-384", private=True), {"alg": "ES256"})
    with pytest.raises(ValueError, match="2048"):
        CompactSigner("RS256", RSAKey.import_key(rsa.generate_private_key(65537, 1024)), {"alg": "RS256"})
    with pytest.raises(ValueError, match="private key"):
        CompactSigner("ES256", ECKey.import_key(p256.as_dict(private=False)), {"alg": "ES256"})
    with pytest.raises(ValueError, match="another algorithm"):
        CompactSigner("RS256", rsa_2048, {"alg": "none"})
    with pytest.raises(ValueError, match="unsupported"):
        CompactSigner("HS256", rsa_2048, {"alg": "HS256"})


def test_the_minter_signs_with_the_current_key_after_a_rotation(idp):
    keys, minter = idp.ctx.keys, idp.ctx.faces["oidc"].minter
    now = int(time.time())
    before = minter.id_token(sub="s", client_id="c", auth_time=now, nonce="n", now=now)
    run(idp.store, keys.rotate())
    later = now + idp.settings.jwks_max_age + 1
    after = minter.id_token(sub="s", client_id="c", auth_time=later, nonce="n", now=later)
    access = minter.access_token(sub="s", client_id="c", scopes=["openid"], auth_time=later, grant_id="g", now=later)
    assert json.loads(_part(before, 0))["kid"] == keys.signing_key(ID_TOKEN_ALG, now).kid
    assert json.loads(_part(after, 0)) == {
        "alg": "RS256",
        "kid": keys.signing_key(ID_TOKEN_ALG, later).kid,
        "typ": "JWT",
    }
    assert json.loads(_part(access, 0)) == {
        "alg": "ES256",
        "kid": keys.signing_key(ACCESS_TOKEN_ALG, later).kid,
        "typ": "at+jwt",
    }
    for token in (before, after, access):
        jws.deserialize_compact(token, run(idp.store, keys.verification_keys()), algorithms=["RS256", "ES256"])


# --- reading our ES256 tokens back (protocol/jws.split_compact, es256_valid) -------------------


def _seg(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_split_compact_returns_what_was_signed():
    key = ECKey.generate_key("P-256", private=True)
    token = CompactSigner("ES256", key, {"alg": "ES256", "kid": "k"}).sign({"sub": "ü"})
    header, signing_input, payload, signature = split_compact(token)
    assert header == {"alg": "ES256", "kid": "k"}
    assert signing_input == token.rsplit(".", 1)[0].encode()
    assert json.loads(payload) == {"sub": "ü"} and len(signature) == 64
    public = ECKey.import_key(key.as_dict(private=False))
    assert es256_valid(public, signing_input, signature)
    other = ECKey.generate_key("P-256", private=True)
    assert not es256_valid(other, signing_input, signature)
    assert not es256_valid(public, signing_input + b"x", signature)
    assert not es256_valid(public, signing_input, signature[:-1])  # not 64 octets
    assert not es256_valid(public, signing_input, bytes(64))  # r = s = 0
    assert not es256_valid(RSAKey.generate_key(2048, private=True), signing_input, signature)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "a.b",
        "a.b.c.d",
        f"{_seg(b'{}')}=.{_seg(b'{}')}.{_seg(b'x')}",  # padding
        f"{_seg(b'{}')}.{_seg(b'{}')}.ab+c",  # not the URL alphabet
        f"{_seg(b'{}')}.{_seg(b'{}')}.abcde",  # a length no base64 has
        f"{_seg(b'[1]')}.{_seg(b'{}')}.{_seg(b'x')}",  # the header is not an object
        f"{_seg(b'{')}.{_seg(b'{}')}.{_seg(b'x')}",  # not JSON
        _seg(bytes([0xFF, 0xFE])) + f".{_seg(b'{}')}.{_seg(b'x')}",  # not UTF-8
        f"{_seg(b'[' * 3000 + b']' * 3000)}.{_seg(b'{}')}.{_seg(b'x')}",  # nested past the parser's depth
    ],
)
def test_split_compact_refuses_what_is_not_a_compact_jws(token):
    with pytest.raises(ValueError):
        split_compact(token)


def test_an_es256_header_naming_our_rs256_key_finds_no_key(idp):
    """The kid of our own ID token key under alg ES256: no key, so no verification is attempted."""
    keys = idp.ctx.keys
    rs_kid = keys.signing_key(ID_TOKEN_ALG).kid
    assert run(idp.store, keys.verification_key(rs_kid, ACCESS_TOKEN_ALG)) is None
    es = keys.signing_key(ACCESS_TOKEN_ALG)
    found = run(idp.store, keys.verification_key(es.kid, ACCESS_TOKEN_ALG))
    assert found.private_key is None and found.public_key.public_numbers() == es.public_key.public_numbers()
    assert run(idp.store, keys.verification_key("no-such-kid", ACCESS_TOKEN_ALG)) is None
