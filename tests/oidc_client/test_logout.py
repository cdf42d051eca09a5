"""The RP side of single logout: the RP-Initiated Logout 1.0 URL, and Back-Channel Logout 1.0
logout token validation (signature by kid, iss, aud, iat, events, sid/sub, no nonce, jti once),
sync and async."""

from __future__ import annotations

import time
import uuid
from urllib.parse import parse_qs, urlsplit

import pytest
from joserfc.jwk import RSAKey

from campusid.oidc_client import LogoutTokenError, logout_url

from .fake_op import CLIENT_ID

EVENT = {"http://schemas.openid.net/event/backchannel-logout": {}}


def logout_claims(op, **overrides):
    now = int(time.time())
    claims = {
        "iss": op.issuer,
        "aud": CLIENT_ID,
        "iat": now,
        "exp": now + 120,
        "jti": uuid.uuid4().hex,
        "sid": "sid-1",
        "sub": "pairwise-sub-1",
        "events": EVENT,
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def test_logout_url_carries_the_parameters():
    url = logout_url(
        "https://idp.example.edu/logout?x=1",
        id_token_hint="h.i.t",
        post_logout_redirect_uri="https://rp.example.edu/bye",
        state="s&1",
        ui_locales="zh-CN en",
    )
    parts = urlsplit(url)
    assert parts.path == "/logout"
    assert parse_qs(parts.query) == {
        "x": ["1"],
        "id_token_hint": ["h.i.t"],
        "post_logout_redirect_uri": ["https://rp.example.edu/bye"],
        "state": ["s&1"],
        "ui_locales": ["zh-CN en"],
    }
    with pytest.raises(ValueError, match="id_token_hint or client_id"):
        logout_url("https://idp.example.edu/logout", post_logout_redirect_uri="https://rp.example.edu/bye")


def test_client_builds_the_logout_url_from_discovery(op, client):
    op.metadata_overrides["end_session_endpoint"] = f"{op.issuer}/logout"
    url = client.logout_url(id_token_hint="tok", post_logout_redirect_uri="https://rp.example.edu/bye", state="st")
    q = parse_qs(urlsplit(url).query)
    assert url.startswith(f"{op.issuer}/logout?") and q["client_id"] == [CLIENT_ID] and q["state"] == ["st"]


def test_a_valid_logout_token_is_accepted_once(op, client):
    token = op.sign(logout_claims(op), header={"typ": "logout+jwt"})
    claims = client.validate_logout_token(token)
    assert claims["sid"] == "sid-1" and claims["sub"] == "pairwise-sub-1"
    with pytest.raises(LogoutTokenError, match="already used"):
        client.validate_logout_token(token)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"iss": "https://evil.example"}, "iss"),
        ({"aud": "another-client"}, "aud"),
        ({"iat": None}, "iat"),
        ({"iat": int(time.time()) + 3600}, "future"),
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"events": None}, "event"),
        ({"events": {"http://schemas.openid.net/event/backchannel-logout": "yes"}}, "event"),
        ({"sid": None, "sub": None}, "neither"),
        ({"nonce": "n"}, "nonce"),
        ({"jti": None}, "jti"),
    ],
)
def test_bad_claims_are_refused(op, client, overrides, message):
    with pytest.raises(LogoutTokenError, match=message):
        client.validate_logout_token(op.sign(logout_claims(op, **overrides)))


def test_sid_alone_or_sub_alone_is_enough(op, client):
    assert client.validate_logout_token(op.sign(logout_claims(op, sub=None)))["sid"] == "sid-1"
    assert client.validate_logout_token(op.sign(logout_claims(op, sid=None)))["sub"] == "pairwise-sub-1"


def test_signature_kid_and_alg_are_checked(op, client, rsa_key2):
    foreign = RSAKey.generate_key(2048, parameters={"kid": "k1", "alg": "RS256"})  # our kid, not our key
    with pytest.raises(LogoutTokenError, match="signature"):
        client.validate_logout_token(op.sign(logout_claims(op), key=foreign))
    with pytest.raises(LogoutTokenError, match="kid"):
        client.validate_logout_token(op.sign(logout_claims(op), key=rsa_key2))  # k2 is not published
    header, payload, _ = op.sign(logout_claims(op)).split(".")
    import base64

    none = base64.urlsafe_b64encode(b'{"alg":"none"}').rstrip(b"=").decode()
    with pytest.raises(LogoutTokenError, match="not accepted"):
        client.validate_logout_token(f"{none}.{payload}.")
    with pytest.raises(LogoutTokenError):
        client.validate_logout_token("not a jwt")
    with pytest.raises(LogoutTokenError, match="typ"):
        client.validate_logout_token(op.sign(logout_claims(op), header={"typ": "at+jwt"}))


def test_an_id_token_is_not_a_logout_token(op, client):
    with pytest.raises(LogoutTokenError):
        client.validate_logout_token(op.sign(op.claims(nonce="n1", jti="j1", sid="s")))


async def test_async_face(op, aclient):
    op.metadata_overrides["end_session_endpoint"] = f"{op.issuer}/logout"
    assert (await aclient.logout_url(state="x")).startswith(f"{op.issuer}/logout?client_id=")
    token = op.sign(logout_claims(op))
    assert (await aclient.validate_logout_token(token))["sid"] == "sid-1"
    with pytest.raises(LogoutTokenError, match="already used"):
        await aclient.validate_logout_token(token)
