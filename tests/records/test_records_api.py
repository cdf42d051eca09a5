"""GET /records/v1/grades: RFC 6750 answers for every kind of bad token, and the
student's own grades for a good one. Forged tokens are made here with joserfc and the stdlib."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import time

import pytest
from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey

from tests.idp.helpers import make_user
from tests.records.conftest import (
    GRADES_URL,
    claims_of,
    good_claims,
    native_tokens,
    sign_with_real_key,
    web_tokens,
)

GRADE_FIELDS = {"course_code", "course_name", "term", "credits", "score", "grade_point"}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def get(web, token: str | None = None, header: str | None = None):
    headers = {}
    if header is not None:
        headers["Authorization"] = header
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return web.get(GRADES_URL, headers=headers)


def challenge(response) -> dict[str, str]:
    value = response.headers["www-authenticate"]
    assert value.startswith("Bearer"), value
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


def assert_invalid_token(response) -> None:
    assert response.status_code == 401, response.text
    assert challenge(response)["error"] == "invalid_token"
    assert response.json()["error"] == "invalid_token"
    assert response.headers["cache-control"] == "no-store"


@pytest.fixture
def alice_tokens(records_idp, web):
    return native_tokens(records_idp, web)


# --- the good case --------------------------------------------------------------------------


def test_good_token_returns_the_students_name_and_grades(records_idp, web, alice_tokens):
    r = get(web, alice_tokens["access_token"])
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    body = r.json()
    assert body["student"] == {"name": "Alice Zhang"}
    assert len(body["grades"]) == 5
    assert all(set(g) == GRADE_FIELDS for g in body["grades"])
    cs101 = next(g for g in body["grades"] if g["course_code"] == "CS101")
    assert cs101 == {
        "course_code": "CS101",
        "course_name": "Introduction to Programming",
        "term": "2025-autumn",
        "credits": 4,
        "score": 92,
        "grade_point": 4.0,
    }


def test_the_pairwise_subject_is_resolved_to_the_student_on_the_server(records_idp, web, alice_tokens):
    make_user(records_idp.store, "bob", student_number="2024002", name="Bob Li")
    web.cookies.clear()
    bob = native_tokens(records_idp, web, username="bob")
    r = get(web, bob["access_token"])
    assert r.status_code == 200
    assert r.json()["student"] == {"name": "Bob Li"}
    assert {g["course_code"] for g in r.json()["grades"]} == {"CS101", "MA101", "HI101"}
    # the student number never appears in the token's subject
    assert "2024002" not in claims_of(records_idp, bob["access_token"])["sub"]
    assert (
        claims_of(records_idp, bob["access_token"])["sub"]
        != claims_of(records_idp, alice_tokens["access_token"])["sub"]
    )


def test_a_student_without_grades_gets_an_empty_list(records_idp, web):
    make_user(records_idp.store, "carol", student_number="2099999", name="Carol")
    token = native_tokens(records_idp, web, scope="openid grades.read", username="carol")["access_token"]
    r = get(web, token)
    assert r.status_code == 200 and r.json() == {"student": {"name": "Carol"}, "grades": []}


# --- no token and malformed requests --------------------------------------------------------


def test_no_token_is_401_with_a_bare_bearer_challenge(web):
    r = get(web)
    assert r.status_code == 401
    value = r.headers["www-authenticate"]
    assert value.startswith("Bearer")
    assert "error=" not in value  # RFC 6750 3.1: no error code when no credentials were sent


@pytest.mark.parametrize(
    "header",
    ["Basic YWxpY2U6c2VjcmV0", "Bearer", "Bearer ", "Bearer a b", "Bearertoken", "Token abc.def.ghi"],
)
def test_malformed_authorization_header_is_invalid_token(web, header):
    assert_invalid_token(get(web, header=header))


@pytest.mark.parametrize(
    "token",
    [
        "abc",
        "a.b.c",
        "eyJhbGciOiJFUzI1NiJ9.e30.",
        "x" * 9000,
        b64(b"[" * 2500 + b"]" * 2500) + ".e30." + b64(b"x" * 64),  # a header nested past any parser's depth
        "eyJhbGciOiJFUzI1NiJ9=.e30." + b64(b"x" * 64),  # padded base64
    ],
)
def test_garbage_token_is_invalid_token(web, token):
    assert_invalid_token(get(web, token))


def test_token_in_the_query_string_is_not_accepted(web, alice_tokens):
    r = web.get(GRADES_URL, params={"access_token": alice_tokens["access_token"]})
    assert r.status_code == 401 and "error=" not in r.headers["www-authenticate"]


# --- claims: expiry, scope, audience, issuer -------------------------------------------------


def test_expired_token_is_invalid_token(records_idp, web, alice_tokens):
    base = claims_of(records_idp, alice_tokens["access_token"])
    now = int(time.time())
    token = sign_with_real_key(records_idp, good_claims(records_idp, base, iat=now - 7200, exp=now - 3600))
    r = get(web, token)
    assert_invalid_token(r)
    assert "expired" in challenge(r)["error_description"]


def test_token_without_grades_read_is_403_insufficient_scope(records_idp, web):
    token = web_tokens(records_idp, web)["access_token"]  # a real token of a client never granted grades.read
    assert "grades.read" not in claims_of(records_idp, token)["scope"].split()
    r = get(web, token)
    assert r.status_code == 403, r.text
    assert challenge(r)["error"] == "insufficient_scope"
    assert r.json()["error"] == "insufficient_scope"


def test_scope_is_checked_before_audience(records_idp, web, alice_tokens):
    # a native login without grades.read: the token is neither for the records audience nor scoped
    token = native_tokens(records_idp, web, scope="openid profile")["access_token"]
    claims = claims_of(records_idp, token)
    assert claims["aud"] == records_idp.issuer
    r = get(web, token)
    assert r.status_code == 403 and challenge(r)["error"] == "insufficient_scope"


@pytest.mark.parametrize(
    "aud",
    [
        "ISSUER",  # userinfo only
        "https://records.other.example/records",
        ["https://rp.example.edu", "native-app"],
    ],
)
def test_token_for_another_audience_is_invalid_token(records_idp, web, alice_tokens, aud):
    base = claims_of(records_idp, alice_tokens["access_token"])
    aud = records_idp.issuer if aud == "ISSUER" else aud
    token = sign_with_real_key(records_idp, good_claims(records_idp, base, aud=aud))
    r = get(web, token)
    assert_invalid_token(r)
    assert "audience" in challenge(r)["error_description"]


def test_token_from_another_issuer_is_invalid_token(records_idp, web, alice_tokens):
    base = claims_of(records_idp, alice_tokens["access_token"])
    other = "http://127.0.0.1:9999"
    token = sign_with_real_key(records_idp, good_claims(records_idp, base, iss=other, aud=[other, other + "/records"]))
    assert_invalid_token(get(web, token))


def test_token_with_a_real_signature_but_wrong_typ_is_invalid_token(records_idp, web, alice_tokens):
    base = claims_of(records_idp, alice_tokens["access_token"])
    token = sign_with_real_key(records_idp, good_claims(records_idp, base), header={"typ": "JWT"})
    assert_invalid_token(get(web, token))


def test_id_token_is_not_an_access_token(records_idp, web, alice_tokens):
    assert_invalid_token(get(web, alice_tokens["id_token"]))


# --- signatures: unknown key, alg none, HS256, RS256 ------------------------------------------


def test_token_signed_by_an_unknown_key_with_the_same_kid_shape_is_invalid_token(records_idp, web, alice_tokens):
    base = claims_of(records_idp, alice_tokens["access_token"])
    real_kid = records_idp.ctx.keys.signing_key("ES256").kid
    for kid in (real_kid, real_kid[:-6] + "zzzzzz"):  # the real kid itself, and an unpublished one
        forger = ECKey.generate_key("P-256", parameters={"kid": kid, "alg": "ES256"}, private=True)
        token = jwt.encode({"alg": "ES256", "kid": kid, "typ": "at+jwt"}, good_claims(records_idp, base), forger)
        assert_invalid_token(get(web, token))


def test_alg_none_is_invalid_token(records_idp, web, alice_tokens):
    base = claims_of(records_idp, alice_tokens["access_token"])
    kid = records_idp.ctx.keys.signing_key("ES256").kid
    header = b64(json.dumps({"alg": "none", "kid": kid, "typ": "at+jwt"}).encode())
    payload = b64(json.dumps(good_claims(records_idp, base)).encode())
    for token in (f"{header}.{payload}.", f"{header}.{payload}.{b64(b'x' * 64)}"):
        assert_invalid_token(get(web, token))


def test_hs256_with_the_public_key_as_secret_is_invalid_token(records_idp, web, alice_tokens):
    """The algorithm-confusion attack: HMAC keyed with the published public key."""
    base = claims_of(records_idp, alice_tokens["access_token"])
    real = records_idp.ctx.keys.signing_key("ES256")
    public_jwk = json.dumps(real.as_dict(private=False)).encode()
    header = b64(json.dumps({"alg": "HS256", "kid": real.kid, "typ": "at+jwt"}).encode())
    payload = b64(json.dumps(good_claims(records_idp, base)).encode())
    for secret in (public_jwk, real.as_pem(private=False)):
        sig = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        assert_invalid_token(get(web, f"{header}.{payload}.{b64(sig)}"))


def test_rs256_signed_by_our_own_id_token_key_is_invalid_token(records_idp, web, alice_tokens):
    """A genuine key of ours, but the algorithm is pinned to ES256 for access tokens."""
    base = claims_of(records_idp, alice_tokens["access_token"])
    rsa: RSAKey = records_idp.ctx.keys.signing_key("RS256")
    token = jwt.encode({"alg": "RS256", "kid": rsa.kid, "typ": "at+jwt"}, good_claims(records_idp, base), rsa)
    assert_invalid_token(get(web, token))


def test_tampered_payload_is_invalid_token(records_idp, web, alice_tokens):
    header, payload, sig = alice_tokens["access_token"].split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["exp"] += 3600
    assert_invalid_token(get(web, f"{header}.{b64(json.dumps(claims).encode())}.{sig}"))


# --- the grant behind the token ---------------------------------------------------------------


def test_revoked_grants_token_is_refused(records_idp, web, alice_tokens):
    token = alice_tokens["access_token"]
    assert get(web, token).status_code == 200
    r = web.post(
        "/oauth/revoke",
        data={"token": alice_tokens["refresh_token"], "client_id": records_idp.native_id},
    )
    assert r.status_code == 200
    r = get(web, token)
    assert_invalid_token(r)
    assert "revoked" in challenge(r)["error_description"]


def test_revoking_the_access_token_itself_ends_it(records_idp, web, alice_tokens):
    token = alice_tokens["access_token"]
    web.post("/oauth/revoke", data={"token": token, "client_id": records_idp.native_id})
    assert_invalid_token(get(web, token))
