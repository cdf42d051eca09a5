"""Token endpoint, refresh, revocation and userinfo (RFC 6749 2.3.1, 5, 6; RFC 7009; OIDC Core 5.3)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from urllib.parse import parse_qs

import httpx
import pytest

from campusid.oidc_client import IDTokenError, OIDCClient, OIDCError, TokenEndpointError, UserInfoError
from campusid.oidc_client.tokens import basic_auth_header, parse_retry_after

from .fake_op import CLIENT_ID, FakeOP, basic_credentials


def _body(request: httpx.Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(request.content.decode()).items()}


def test_basic_auth_form_urlencodes_before_base64() -> None:
    """RFC 6749 2.3.1: 'a:b+c%d é' -> 'a%3Ab%2Bc%25d+%C3%A9' before base64."""
    header = basic_auth_header("my:app", "a:b+c%d é")
    decoded = base64.b64decode(header.removeprefix("Basic ")).decode("ascii")
    assert decoded == "my%3Aapp:a%3Ab%2Bc%25d+%C3%A9"


@pytest.mark.parametrize("secret", ["s3cr3t", "with:colon", "plus+and%percent", "nön-ÄSCII ✓", ":+%é "])
def test_confidential_client_sends_client_secret_basic(make_client, op: FakeOP, secret: str) -> None:
    client = make_client(client_secret=secret)
    req = client.authorization_request()
    client.handle_callback(req, op.authorize(req))
    token_request = next(r for r in op.requests if r.url.path == "/oauth/token")
    assert basic_credentials(token_request) == (CLIENT_ID, secret)
    body = _body(token_request)
    assert "client_secret" not in body and "client_id" not in body
    assert body["grant_type"] == "authorization_code"


def test_public_client_sends_client_id_and_no_secret(client: OIDCClient, op: FakeOP) -> None:
    req = client.authorization_request()
    client.handle_callback(req, op.authorize(req))
    token_request = next(r for r in op.requests if r.url.path == "/oauth/token")
    assert "Authorization" not in token_request.headers
    assert _body(token_request)["client_id"] == CLIENT_ID


def test_429_gives_retry_after_and_is_not_retried(client: OIDCClient, op: FakeOP) -> None:
    op.token_override = lambda r: httpx.Response(429, headers={"Retry-After": "17"}, json={"error": "slow_down"})
    req = client.authorization_request()
    with pytest.raises(TokenEndpointError) as excinfo:
        client.handle_callback(req, op.authorize(req))
    err = excinfo.value
    assert (err.error, err.status, err.retry_after) == ("slow_down", 429, 17.0)
    assert op.calls["/oauth/token"] == 1  # a code is never retried


def test_retry_after_http_date_and_missing_error_body(client: OIDCClient, op: FakeOP) -> None:
    now = datetime.now(UTC)
    when = format_datetime(now + timedelta(seconds=120), usegmt=True)
    assert 100 <= parse_retry_after(when, now=now) <= 120
    assert parse_retry_after("garbage") is None and parse_retry_after(None) is None
    op.token_override = lambda r: httpx.Response(429, headers={"Retry-After": when}, text="too many")
    with pytest.raises(TokenEndpointError) as excinfo:
        client.refresh("rt-1")
    assert excinfo.value.error == "temporarily_unavailable" and 0 < excinfo.value.retry_after <= 120


def test_error_description_never_leaks_the_verifier(client: OIDCClient, op: FakeOP) -> None:
    req = client.authorization_request()

    def echo(request: httpx.Request) -> httpx.Response:
        verifier = _body(request)["code_verifier"]
        return httpx.Response(400, json={"error": "invalid_grant", "error_description": f"bad {verifier}"})

    op.token_override = echo
    with pytest.raises(TokenEndpointError) as excinfo:
        client.handle_callback(req, op.authorize(req))
    assert excinfo.value.error == "invalid_grant"
    assert req.code_verifier not in str(excinfo.value) and req.code_verifier not in repr(excinfo.value)
    assert "[redacted]" in excinfo.value.description


def test_network_failure_on_exchange_is_a_typed_error_sent_once(client: OIDCClient, op: FakeOP) -> None:
    def drop(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    op.token_override = drop
    req = client.authorization_request()
    with pytest.raises(TokenEndpointError) as excinfo:
        client.handle_callback(req, op.authorize(req))
    assert excinfo.value.status is None and excinfo.value.error == "network_error"
    assert op.calls["/oauth/token"] == 1


def test_token_response_without_id_token_is_refused(client: OIDCClient, op: FakeOP) -> None:
    op.token_override = lambda r: httpx.Response(200, json={"access_token": "a", "token_type": "Bearer"})
    req = client.authorization_request()
    with pytest.raises(IDTokenError, match="no id_token"):
        client.handle_callback(req, op.authorize(req))


def test_id_token_with_wrong_nonce_fails_the_login(client: OIDCClient, op: FakeOP) -> None:
    op.id_claim_overrides["nonce"] = "from-another-login"
    req = client.authorization_request()
    with pytest.raises(IDTokenError, match="nonce"):
        client.handle_callback(req, op.authorize(req))


def test_token_set_repr_never_shows_tokens(client: OIDCClient, op: FakeOP) -> None:
    req = client.authorization_request()
    tokens = client.handle_callback(req, op.authorize(req))
    for text in (repr(tokens), str(tokens), f"{tokens}"):
        assert "at-1" not in text and "rt-1" not in text and tokens.id_token not in text
        assert "Bearer" in text
    assert not tokens.is_expired()
    assert tokens.is_expired(now=tokens.expires_at)


def test_refresh_validates_the_new_id_token(make_client, op: FakeOP) -> None:
    client = make_client(client_secret="s:+%")
    tokens = client.refresh("rt-1", scope="openid")
    assert tokens.access_token == "at-2"
    assert tokens.refresh_token == "rt-1"  # RFC 6749 6: no new refresh token, the old one stays
    assert tokens.id_claims["sub"] == "pairwise-sub-1"
    request = next(r for r in op.requests if r.url.path == "/oauth/token")
    assert _body(request) == {"grant_type": "refresh_token", "refresh_token": "rt-1", "scope": "openid"}
    assert basic_credentials(request) == (CLIENT_ID, "s:+%")

    op.id_claim_overrides["aud"] = "other-client"
    with pytest.raises(IDTokenError, match="aud"):
        client.refresh("rt-1")
    with pytest.raises(TokenEndpointError) as excinfo:
        client.refresh("revoked")
    assert excinfo.value.error == "invalid_grant" and excinfo.value.status == 400


def test_revoke(make_client, op: FakeOP) -> None:
    client = make_client(client_secret="s")
    client.revoke("rt-1", token_type_hint="refresh_token")
    request = op.requests[-1]
    assert request.url.path == "/oauth/revoke"
    assert _body(request) == {"token": "rt-1", "token_type_hint": "refresh_token"}
    assert basic_credentials(request) == (CLIENT_ID, "s")


def test_revoke_errors(client: OIDCClient, op: FakeOP) -> None:
    op.metadata_overrides["revocation_endpoint"] = None
    with pytest.raises(OIDCError, match="revocation"):
        client.revoke("t")


def test_revoke_503_with_retry_after(rsa_key) -> None:
    op = FakeOP(key=rsa_key)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/oauth/revoke":
            return httpx.Response(503, headers={"Retry-After": "5"})
        return op.handler(request)

    client = OIDCClient(
        issuer=op.issuer, client_id=CLIENT_ID, http=httpx.Client(transport=httpx.MockTransport(handler))
    )
    with pytest.raises(TokenEndpointError) as excinfo:
        client.revoke("t")
    assert excinfo.value.retry_after == 5.0 and excinfo.value.status == 503


def test_userinfo(client: OIDCClient, op: FakeOP) -> None:
    assert client.userinfo("at-1") == {"sub": "pairwise-sub-1", "name": "Ada"}
    assert op.requests[-1].headers["Authorization"] == "Bearer at-1"
    with pytest.raises(UserInfoError) as excinfo:
        client.userinfo("expired")
    assert excinfo.value.error == "invalid_token" and excinfo.value.status == 401
    with pytest.raises(UserInfoError, match="sub"):
        client.userinfo("at-1", expected_sub="someone-else")
