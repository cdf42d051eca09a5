"""Canonical ASCII issuer (campusid.issuer; OpenID Connect Discovery 1.0 section 4.3)."""

from __future__ import annotations

import pytest

from campusid.oidc_client import OIDCClient, canonical_issuer


@pytest.mark.parametrize(
    ("configured", "canonical"),
    [
        ("https://idp.example", "https://idp.example"),
        ("https://IDP.Example/", "https://idp.example"),
        ("https://idp.example:443/tenant/", "https://idp.example/tenant"),
        ("https://bücher.example", "https://xn--bcher-kva.example"),
        ("https://xn--bcher-kva.example", "https://xn--bcher-kva.example"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://localhost:8000/", "http://localhost:8000"),
    ],
)
def test_canonical_issuer(configured: str, canonical: str) -> None:
    assert canonical_issuer(configured) == canonical


@pytest.mark.parametrize(
    "bad",
    ["http://idp.example", "https://idp.example/?a=1", "https://idp.example/#x", "ftp://idp.example", "idp.example"],
)
def test_canonical_issuer_refuses(bad: str) -> None:
    with pytest.raises(ValueError):
        canonical_issuer(bad)


def test_client_uses_the_canonical_issuer() -> None:
    client = OIDCClient(issuer="https://Bücher.example/", client_id="x")
    try:
        assert client.issuer == "https://xn--bcher-kva.example"
        assert "secret" not in repr(OIDCClient(issuer="https://a.example", client_id="x", client_secret="secret"))
    finally:
        client.close()
