"""ID token validation (OpenID Connect Core 1.0 section 3.1.3.7) with real signatures."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import httpx
import pytest
from joserfc.jwk import ECKey, RSAKey

from campusid.oidc_client import IDTokenError, OIDCClient

from .fake_op import CLIENT_ID, FakeOP


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def test_valid_token(client: OIDCClient, op: FakeOP) -> None:
    claims = client.validate_id_token(op.sign(op.claims(nonce="n-1")), nonce="n-1")
    assert claims["sub"] == "pairwise-sub-1"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"aud": "someone-else"}, "aud"),
        ({"aud": ["someone-else", "other"]}, "aud"),
        ({"aud": None}, "aud"),
        ({"aud": [CLIENT_ID, "other"]}, "azp"),  # several audiences without azp
        ({"aud": [CLIENT_ID, "other"], "azp": "other"}, "azp"),
        ({"exp": -61}, "expired"),  # beyond the 60 s leeway (seconds from now, at test time)
        ({"exp": None}, "exp"),
        ({"iat": +120}, "future"),
        ({"iat": None}, "iat"),
        ({"iss": "https://evil.example"}, "iss"),
        ({"iss": "https://idp.example/"}, "iss"),
        ({"sub": None}, "sub"),
    ],
)
def test_claim_rules(client: OIDCClient, op: FakeOP, overrides: dict, message: str) -> None:
    # times are offsets from now, taken when the test runs (not when it was collected)
    overrides = {k: int(time.time()) + v if k in ("exp", "iat") and v is not None else v for k, v in overrides.items()}
    with pytest.raises(IDTokenError, match=message):
        client.validate_id_token(op.sign(op.claims(**overrides)))


def test_several_audiences_with_our_azp_pass(client: OIDCClient, op: FakeOP) -> None:
    claims = client.validate_id_token(op.sign(op.claims(aud=[CLIENT_ID, "api"], azp=CLIENT_ID)))
    assert claims["azp"] == CLIENT_ID


def test_leeway_tolerates_small_clock_skew(client: OIDCClient, op: FakeOP) -> None:
    now = int(time.time())
    assert client.validate_id_token(op.sign(op.claims(exp=now - 30, iat=now + 30)))["sub"]


def test_wrong_or_missing_nonce(client: OIDCClient, op: FakeOP) -> None:
    with pytest.raises(IDTokenError, match="nonce"):
        client.validate_id_token(op.sign(op.claims(nonce="other")), nonce="mine")
    with pytest.raises(IDTokenError, match="nonce"):
        client.validate_id_token(op.sign(op.claims()), nonce="mine")


def test_max_age_needs_a_recent_auth_time(client: OIDCClient, op: FakeOP) -> None:
    now = int(time.time())
    assert client.validate_id_token(op.sign(op.claims(auth_time=now - 10)), max_age=60)
    with pytest.raises(IDTokenError, match="auth_time"):
        client.validate_id_token(op.sign(op.claims(auth_time=now - 3600)), max_age=60)
    with pytest.raises(IDTokenError, match="auth_time"):
        client.validate_id_token(op.sign(op.claims()), max_age=60)


def test_unicode_issuer_claim_is_refused(rsa_key) -> None:
    op = FakeOP(key=rsa_key, issuer="https://xn--bcher-kva.example")
    client = OIDCClient(
        issuer="https://bücher.example",
        client_id=CLIENT_ID,
        http=httpx.Client(transport=httpx.MockTransport(op.handler)),
    )
    assert client.validate_id_token(op.sign(op.claims()))["iss"] == "https://xn--bcher-kva.example"
    with pytest.raises(IDTokenError, match="iss"):
        client.validate_id_token(op.sign(op.claims(iss="https://bücher.example")))


def test_alg_none_is_refused(client: OIDCClient, op: FakeOP) -> None:
    token = f"{_b64({'alg': 'none', 'kid': 'k1'})}.{_b64(op.claims())}."
    with pytest.raises(IDTokenError, match="none"):
        client.validate_id_token(token)
    assert op.calls["/oauth/jwks"] == 0


def test_hs256_signed_with_the_public_key_is_refused(client: OIDCClient, op: FakeOP, rsa_key: RSAKey) -> None:
    """The classic key-confusion attack: HMAC with the provider's public key as the secret."""
    # joserfc itself refuses to build such a key, so the attacker's token is made by hand here.
    public_pem = rsa_key.as_pem(private=False)
    signing_input = f"{_b64({'alg': 'HS256', 'kid': 'k1'})}.{_b64(op.claims())}"
    mac = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
    forged = f"{signing_input}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"
    with pytest.raises(IDTokenError, match="HS256"):
        client.validate_id_token(forged)


def test_token_signed_by_another_key_with_our_kid_is_refused(client: OIDCClient, op: FakeOP) -> None:
    attacker = RSAKey.generate_key(2048, parameters={"kid": "k1", "alg": "RS256"})
    with pytest.raises(IDTokenError, match="signature"):
        client.validate_id_token(op.sign(op.claims(), key=attacker))


def test_tampered_payload_is_refused(client: OIDCClient, op: FakeOP) -> None:
    header, _, signature = op.sign(op.claims()).split(".")
    with pytest.raises(IDTokenError, match="signature"):
        client.validate_id_token(f"{header}.{_b64(op.claims(sub='admin'))}.{signature}")


def test_unknown_kid_refreshes_the_jwks_exactly_once(client: OIDCClient, op: FakeOP) -> None:
    client.validate_id_token(op.sign(op.claims()))
    assert op.calls["/oauth/jwks"] == 1
    client.validate_id_token(op.sign(op.claims()))
    assert op.calls["/oauth/jwks"] == 1  # cached
    with pytest.raises(IDTokenError, match="no key"):
        client.validate_id_token(op.sign(op.claims(), header={"kid": "unknown"}))
    assert op.calls["/oauth/jwks"] == 2  # one refresh, and only one


def test_first_fetch_counts_as_the_refresh(client: OIDCClient, op: FakeOP) -> None:
    with pytest.raises(IDTokenError, match="no key"):
        client.validate_id_token(op.sign(op.claims(), header={"kid": "unknown"}))
    assert op.calls["/oauth/jwks"] == 1


def test_rotated_key_is_found_after_one_refresh(client: OIDCClient, op: FakeOP, rsa_key2: RSAKey) -> None:
    client.validate_id_token(op.sign(op.claims()))
    op.jwks_keys = [op.key, rsa_key2]  # the provider rotates
    assert client.validate_id_token(op.sign(op.claims(), key=rsa_key2))["sub"]
    assert op.calls["/oauth/jwks"] == 2


def test_es256_from_the_jwks_is_accepted(rsa_key) -> None:
    ec = ECKey.generate_key("P-256", parameters={"kid": "e1", "alg": "ES256", "use": "sig"})
    op = FakeOP(key=rsa_key, jwks_keys=[rsa_key, ec])
    client = OIDCClient(
        issuer=op.issuer, client_id=CLIENT_ID, http=httpx.Client(transport=httpx.MockTransport(op.handler))
    )
    assert client.validate_id_token(op.sign(op.claims(), key=ec))["sub"]


def test_not_a_jws(client: OIDCClient) -> None:
    for value in ["", "a.b", "a.b.c.d.e", "x.y.z"]:
        with pytest.raises(IDTokenError):
            client.validate_id_token(value)
