"""End-to-end interop against panva/node-oidc-provider 9.13.3 (a real provider we did not write).

Starts ``node server.mjs`` (fixture ``node_op``), then runs discovery, the authorization code
flow with PKCE S256 (the "browser" is an httpx client following the provider's redirects and
its login/consent interaction), the token exchange and ID-token validation, for the
confidential (client_secret_basic) and the public native (loopback redirect) client.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
import pytest

from campusid.oidc_client import (
    AsyncOIDCClient,
    IDTokenError,
    LoopbackReceiver,
    OIDCClient,
    StateMismatchError,
    TokenEndpointError,
)

pytestmark = pytest.mark.e2e

WEB_REDIRECT = "http://127.0.0.1:9/web/callback"  # registered for web-client; never actually contacted


def browse(url: str, *, stop_at: str | None = None) -> httpx.Response | str:
    """Follow the provider's redirects like a browser with a cookie jar.

    With ``stop_at``, returns the first redirect URL starting with it (the web app's callback);
    otherwise follows to the end and returns the last response (the loopback receiver's page).
    """
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        for _ in range(15):
            response = browser.get(url)
            if response.status_code not in (302, 303):
                return response
            url = urljoin(url, response.headers["Location"])
            if stop_at is not None and url.startswith(stop_at):
                return url
    raise AssertionError("too many redirects")


def test_discovery_of_a_third_party_provider(node_op) -> None:
    with OIDCClient(issuer=node_op.issuer, client_id="web-client", client_secret=node_op.web_secret) as client:
        metadata = client.discover()
    assert metadata.issuer == node_op.issuer
    assert metadata.token_endpoint == f"{node_op.issuer}/token"
    assert metadata.iss_parameter_supported is True
    assert metadata.revocation_endpoint is not None


def test_confidential_client_code_flow_with_pkce(node_op) -> None:
    """client_secret_basic with a secret containing ' ' ':' '+' '%' '/' '&' '=' (RFC 6749 section 2.3.1)."""
    with OIDCClient(
        issuer=node_op.issuer, client_id="web-client", client_secret=node_op.web_secret, redirect_uri=WEB_REDIRECT
    ) as client:
        req = client.authorization_request(scope="openid profile")
        assert req.code_verifier not in req.url
        callback = browse(req.url, stop_at=WEB_REDIRECT)
        assert isinstance(callback, str)
        params = {k: v[0] for k, v in parse_qs(urlsplit(callback).query).items()}
        assert params["iss"] == node_op.issuer and params["state"] == req.state

        tokens = client.handle_callback(req, callback)
        assert tokens.id_claims["sub"] == "test-user"
        assert tokens.id_claims["aud"] == "web-client"
        assert tokens.id_claims["nonce"] == req.nonce
        assert tokens.token_type == "Bearer" and tokens.refresh_token

        assert client.userinfo(tokens.access_token, expected_sub="test-user")["name"] == "Test Student"

        refreshed = client.refresh(tokens.refresh_token)
        assert refreshed.access_token != tokens.access_token
        assert refreshed.id_claims.get("sub") == "test-user"

        # The code is single use: replaying it fails with a typed error (and the client never retries).
        with pytest.raises(TokenEndpointError) as excinfo:
            client.exchange_code(req, params["code"])
        assert excinfo.value.error == "invalid_grant"

        client.revoke(refreshed.refresh_token, token_type_hint="refresh_token")
        with pytest.raises(TokenEndpointError):
            client.refresh(refreshed.refresh_token)


def test_wrong_secret_is_refused_by_the_provider(node_op) -> None:
    with OIDCClient(
        issuer=node_op.issuer, client_id="web-client", client_secret="wrong", redirect_uri=WEB_REDIRECT
    ) as client:
        req = client.authorization_request()
        callback = browse(req.url, stop_at=WEB_REDIRECT)
        with pytest.raises(TokenEndpointError) as excinfo:
            client.handle_callback(req, callback)
    assert excinfo.value.error == "invalid_client"
    assert req.code_verifier not in str(excinfo.value)


def test_native_public_client_with_loopback_receiver(node_op) -> None:
    """RFC 8252: public client, loopback redirect on a random port, PKCE, no secret."""
    with OIDCClient(issuer=node_op.issuer, client_id="native-client") as client, LoopbackReceiver() as receiver:
        req = client.authorization_request(scope="openid profile", redirect_uri=receiver.redirect_uri)
        # The browser is another process; here a thread that ends on the receiver's friendly page.
        with ThreadPoolExecutor(1) as pool:
            page = pool.submit(browse, req.url)
            params = receiver.wait(req.state)
            assert receiver.closed
            assert page.result(timeout=10).status_code == 200
            assert "You can close this window" in page.result().text
        tokens = client.handle_callback(req, params)
    assert tokens.id_claims["sub"] == "test-user"
    assert tokens.id_claims["aud"] == "native-client"
    assert tokens.id_claims["nonce"] == req.nonce


async def test_native_public_client_async(node_op) -> None:
    async with AsyncOIDCClient(issuer=node_op.issuer, client_id="native-client") as client:
        with LoopbackReceiver() as receiver:
            req = await client.authorization_request(redirect_uri=receiver.redirect_uri)
            page, params = await asyncio.gather(asyncio.to_thread(browse, req.url), receiver.wait_async(req.state))
            assert page.status_code == 200
        tokens = await client.handle_callback(req, params)
        assert tokens.id_claims["aud"] == "native-client"
        claims = await client.validate_id_token(tokens.id_token, nonce=req.nonce)
        assert claims["sub"] == "test-user"
        with pytest.raises(IDTokenError):  # a nonce from another login is refused
            await client.validate_id_token(tokens.id_token, nonce="another-login")


def test_callback_from_another_login_is_refused(node_op) -> None:
    with OIDCClient(issuer=node_op.issuer, client_id="native-client", redirect_uri="http://127.0.0.1:5/callback") as c:
        first = c.authorization_request()
        second = c.authorization_request()
        callback = browse(first.url, stop_at="http://127.0.0.1:5/callback")
        with pytest.raises(StateMismatchError):
            c.handle_callback(second, callback)
