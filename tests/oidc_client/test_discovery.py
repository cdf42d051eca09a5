"""Discovery (OpenID Connect Discovery 1.0 section 4) with the exact-issuer rule."""

from __future__ import annotations

import httpx
import pytest

from campusid.oidc_client import DiscoveryError, OIDCClient

from .fake_op import CLIENT_ID, FakeOP


def test_discover_parses_metadata(client: OIDCClient, op: FakeOP) -> None:
    metadata = client.discover()
    assert metadata.issuer == op.issuer
    assert metadata.token_endpoint == "https://idp.example/oauth/token"
    assert metadata.revocation_endpoint == "https://idp.example/oauth/revoke"
    assert metadata.iss_parameter_supported
    assert metadata.raw["code_challenge_methods_supported"] == ["S256"]


def test_discovery_is_cached_for_the_ttl(make_client, op: FakeOP) -> None:
    cached = make_client(discovery_ttl=3600)
    cached.discover()
    cached.discover()
    assert op.calls["/.well-known/openid-configuration"] == 1
    uncached = make_client(discovery_ttl=0)
    uncached.discover()
    uncached.discover()
    assert op.calls["/.well-known/openid-configuration"] == 3


def test_metadata_issuer_must_equal_the_configured_one(client: OIDCClient, op: FakeOP) -> None:
    op.metadata_overrides["issuer"] = "https://idp.example/"
    with pytest.raises(DiscoveryError, match="not the configured issuer"):
        client.discover()


def test_unicode_issuer_in_metadata_is_refused(rsa_key) -> None:
    """Only the canonical ASCII issuer passes, even when it names the same IDN host (Discovery 1.0 section 4.3)."""
    op = FakeOP(key=rsa_key, issuer="https://xn--bcher-kva.example")
    http = httpx.Client(transport=httpx.MockTransport(op.handler))
    client = OIDCClient(issuer="https://bücher.example", client_id=CLIENT_ID, http=http)
    assert client.discover().issuer == "https://xn--bcher-kva.example"
    assert op.requests[0].url.raw_host == b"xn--bcher-kva.example"

    op2 = FakeOP(key=rsa_key, issuer="https://xn--bcher-kva.example")
    op2.metadata_overrides["issuer"] = "https://bücher.example"
    http2 = httpx.Client(transport=httpx.MockTransport(op2.handler))
    with pytest.raises(DiscoveryError):
        OIDCClient(issuer="https://bücher.example", client_id=CLIENT_ID, http=http2).discover()


@pytest.mark.parametrize(
    "override",
    [
        {"token_endpoint": None},
        {"jwks_uri": "not a url"},
        {"token_endpoint": "http://idp.example/oauth/token"},  # https issuer, plain http endpoint
        {"code_challenge_methods_supported": ["plain"]},
    ],
)
def test_unacceptable_metadata(client: OIDCClient, op: FakeOP, override: dict) -> None:
    op.metadata_overrides.update(override)
    with pytest.raises(DiscoveryError):
        client.discover()


def test_discovery_http_and_network_errors() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    down = OIDCClient(
        issuer="https://idp.example", client_id="x", http=httpx.Client(transport=httpx.MockTransport(refuse))
    )
    with pytest.raises(DiscoveryError, match="ConnectError"):
        down.discover()
    broken = OIDCClient(
        issuer="https://idp.example",
        client_id="x",
        http=httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(500, text="oops"))),
    )
    with pytest.raises(DiscoveryError, match="500"):
        broken.discover()
