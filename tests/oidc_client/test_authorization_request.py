"""Authorization request with PKCE S256 (RFC 6749 4.1.1, RFC 7636, OIDC Core 3.1.2.1)."""

from __future__ import annotations

import base64
import hashlib
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from campusid.oidc_client import OIDCClient

from .fake_op import CLIENT_ID, REDIRECT_URI


def _query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


def test_authorization_url_carries_the_required_parameters(client: OIDCClient) -> None:
    req = client.authorization_request(scope="openid profile", prompt="login")
    q = _query(req.url)
    assert req.url.startswith("https://idp.example/oauth/authorize?")
    assert q["response_type"] == "code" and q["client_id"] == CLIENT_ID
    assert q["redirect_uri"] == REDIRECT_URI == req.redirect_uri
    assert q["scope"] == "openid profile" == req.scope
    assert q["state"] == req.state and q["nonce"] == req.nonce
    assert q["code_challenge_method"] == "S256"
    expected = base64.urlsafe_b64encode(hashlib.sha256(req.code_verifier.encode()).digest()).rstrip(b"=").decode()
    assert q["code_challenge"] == expected
    assert q["prompt"] == "login"
    assert req.created_at.tzinfo is not None


def test_verifier_is_strong_and_never_in_the_url_or_repr(client: OIDCClient) -> None:
    req = client.authorization_request()
    assert 43 <= len(req.code_verifier) <= 128
    assert re.fullmatch(r"[A-Za-z0-9\-._~]+", req.code_verifier)
    assert req.code_verifier not in req.url
    assert "code_verifier" not in req.url
    assert req.code_verifier not in repr(req) and req.code_verifier not in str(req)
    assert "code_verifier" not in repr(req)


def test_every_request_is_fresh(client: OIDCClient) -> None:
    a, b = client.authorization_request(), client.authorization_request()
    assert len({a.state, b.state, a.nonce, b.nonce}) == 4
    assert a.code_verifier != b.code_verifier
    assert len(a.state) >= 43  # 256 bits from secrets


def test_redirect_uri_per_call_overrides_the_default(client: OIDCClient) -> None:
    req = client.authorization_request(redirect_uri="http://127.0.0.1:5555/callback")
    assert _query(req.url)["redirect_uri"] == "http://127.0.0.1:5555/callback" == req.redirect_uri


@pytest.mark.parametrize("param", ["state", "nonce", "code_challenge", "code_verifier", "redirect_uri"])
def test_extra_params_cannot_override_protocol_params(client: OIDCClient, param: str) -> None:
    kwargs = {param: "attacker"} if param != "redirect_uri" else {"response_type": "token"}
    with pytest.raises((ValueError, TypeError)):
        client.authorization_request(**kwargs)


def test_scope_must_include_openid_and_redirect_uri_is_required(make_client) -> None:
    client = make_client(redirect_uri=None)
    with pytest.raises(ValueError, match="redirect_uri"):
        client.authorization_request()
    with pytest.raises(ValueError, match="openid"):
        client.authorization_request(scope="profile", redirect_uri=REDIRECT_URI)
