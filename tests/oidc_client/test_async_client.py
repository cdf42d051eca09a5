"""AsyncOIDCClient drives the same flows as OIDCClient; these tests cover its own driver."""

from __future__ import annotations

import httpx
import pytest

from campusid.oidc_client import (
    AsyncOIDCClient,
    DiscoveryError,
    IDTokenError,
    IssuerMismatchError,
    StateMismatchError,
    TokenEndpointError,
)

from .fake_op import FakeOP, basic_credentials


async def test_full_flow(aclient: AsyncOIDCClient, op: FakeOP) -> None:
    metadata = await aclient.discover()
    assert metadata.issuer == op.issuer
    req = await aclient.authorization_request(scope="openid")
    assert req.code_verifier not in req.url
    tokens = await aclient.handle_callback(req, op.authorize(req))
    assert tokens.id_claims["nonce"] == req.nonce
    assert (await aclient.userinfo(tokens.access_token))["sub"] == tokens.id_claims["sub"]
    refreshed = await aclient.refresh(tokens.refresh_token)
    assert refreshed.access_token == "at-2"
    await aclient.revoke(tokens.refresh_token)
    assert op.calls["/oauth/revoke"] == 1
    assert op.calls["/.well-known/openid-configuration"] == 1


async def test_callback_checks(aclient: AsyncOIDCClient, op: FakeOP) -> None:
    req = await aclient.authorization_request()
    with pytest.raises(StateMismatchError):
        await aclient.handle_callback(req, op.authorize(req, state="x"))
    with pytest.raises(IssuerMismatchError):
        await aclient.handle_callback(req, op.authorize(req, iss="https://other.example"))
    assert op.calls["/oauth/token"] == 0


async def test_id_token_rules_and_single_jwks_refresh(aclient: AsyncOIDCClient, op: FakeOP) -> None:
    with pytest.raises(IDTokenError, match="aud"):
        await aclient.validate_id_token(op.sign(op.claims(aud="x")))
    with pytest.raises(IDTokenError, match="no key"):
        await aclient.validate_id_token(op.sign(op.claims(), header={"kid": "nope"}))
    assert op.calls["/oauth/jwks"] == 2


async def test_confidential_client_and_429(op: FakeOP) -> None:
    op.token_override = lambda r: httpx.Response(429, headers={"Retry-After": "3"}, json={"error": "slow_down"})
    async with httpx.AsyncClient(transport=httpx.MockTransport(op.handler)) as http:
        client = AsyncOIDCClient(
            issuer=op.issuer, client_id="campus-app", client_secret="a:b+é", redirect_uri="https://app/cb", http=http
        )
        req = await client.authorization_request()
        with pytest.raises(TokenEndpointError) as excinfo:
            await client.handle_callback(req, op.authorize(req))
    assert excinfo.value.retry_after == 3.0
    token_request = next(r for r in op.requests if r.url.path == "/oauth/token")
    assert basic_credentials(token_request) == ("campus-app", "a:b+é")


async def test_network_error_is_typed() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as http:
        client = AsyncOIDCClient(issuer="https://idp.example", client_id="x", http=http)
        with pytest.raises(DiscoveryError, match="ConnectError"):
            await client.discover()
        await client.aclose()  # a borrowed client is not closed by the library
        assert not http.is_closed


async def test_owned_http_client_is_closed() -> None:
    async with AsyncOIDCClient(issuer="https://idp.example", client_id="x") as client:
        pass
    assert client._http.is_closed
