"""An in-process fake OpenID Provider for unit tests (behind ``httpx.MockTransport``).

It signs real tokens with a real RSA key (joserfc) and checks the real PKCE proof, so the
client's crypto and protocol checks run for real; only the network is fake.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlsplit

import httpx
from joserfc import jwt
from joserfc.jwk import RSAKey

from campusid.oidc_client import AuthorizationRequest

ISSUER = "https://idp.example"
CLIENT_ID = "campus-app"
REDIRECT_URI = "https://app.example/cb"


@dataclass
class FakeOP:
    """A minimal provider: discovery, JWKS, token (code + refresh), userinfo, revocation."""

    key: RSAKey
    issuer: str = ISSUER
    jwks_keys: list[Any] = field(default_factory=list)
    calls: Counter = field(default_factory=Counter)
    requests: list[httpx.Request] = field(default_factory=list)
    metadata_overrides: dict[str, Any] = field(default_factory=dict)
    # Callable(request) -> httpx.Response replacing the token endpoint's normal behaviour.
    token_override: Callable[[httpx.Request], httpx.Response] | None = None
    id_claim_overrides: dict[str, Any] = field(default_factory=dict)
    codes: dict[str, dict[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.jwks_keys:
            self.jwks_keys = [self.key]

    # --- helpers used by tests ------------------------------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        doc = {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/oauth/authorize",
            "token_endpoint": f"{self.issuer}/oauth/token",
            "jwks_uri": f"{self.issuer}/oauth/jwks",
            "userinfo_endpoint": f"{self.issuer}/oauth/userinfo",
            "revocation_endpoint": f"{self.issuer}/oauth/revoke",
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
        }
        doc.update(self.metadata_overrides)
        return {k: v for k, v in doc.items() if v is not None}

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": "pairwise-sub-1", "aud": CLIENT_ID, "iat": now, "exp": now + 300}
        claims.update(overrides)
        return {k: v for k, v in claims.items() if v is not None}

    def sign(self, claims: dict[str, Any], key: Any = None, header: dict[str, Any] | None = None) -> str:
        key = key or self.key
        hdr = {"alg": key.get("alg") or "RS256", "kid": key.kid, "typ": "JWT"}
        hdr.update(header or {})
        hdr = {k: v for k, v in hdr.items() if v is not None}
        return jwt.encode(hdr, claims, key, algorithms=[hdr["alg"]])

    def authorize(self, req: AuthorizationRequest, **extra: str) -> dict[str, str]:
        """Play the browser + login: read the authorization URL, answer like the provider would."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(req.url).query).items()}
        code = f"code-{len(self.codes)}"
        self.codes[code] = query
        return {"code": code, "state": query["state"], "iss": self.issuer, **extra}

    def token_bodies(self) -> list[dict[str, str]]:
        return [
            {k: v[0] for k, v in parse_qs(r.content.decode()).items()}
            for r in self.requests
            if r.url.path == "/oauth/token"
        ]

    # --- the transport handler -----------------------------------------------------------

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        self.calls[path] += 1
        if path == "/.well-known/openid-configuration":
            return httpx.Response(200, json=self.metadata)
        if path == "/oauth/jwks":
            return httpx.Response(200, json={"keys": [k.as_dict(private=False) for k in self.jwks_keys]})
        if path == "/oauth/token":
            if self.token_override is not None:
                return self.token_override(request)
            return self._token(request)
        if path == "/oauth/userinfo":
            if request.headers.get("Authorization") != "Bearer at-1":
                return httpx.Response(401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
            return httpx.Response(200, json={"sub": "pairwise-sub-1", "name": "Ada"})
        if path == "/oauth/revoke":
            return httpx.Response(200)
        return httpx.Response(404)

    def _token(self, request: httpx.Request) -> httpx.Response:
        body = {k: v[0] for k, v in parse_qs(request.content.decode()).items()}
        if body.get("grant_type") == "authorization_code":
            auth = self.codes.pop(body.get("code", ""), None)
            if auth is None:
                return httpx.Response(400, json={"error": "invalid_grant"})
            digest = hashlib.sha256(body.get("code_verifier", "").encode()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != auth["code_challenge"]:
                return httpx.Response(400, json={"error": "invalid_grant", "error_description": "PKCE failed"})
            claims = self.claims(**{"nonce": auth["nonce"], **self.id_claim_overrides})
            return httpx.Response(
                200,
                json={
                    "access_token": "at-1",
                    "token_type": "Bearer",
                    "expires_in": 600,
                    "refresh_token": "rt-1",
                    "id_token": self.sign(claims),
                    "scope": auth["scope"],
                },
            )
        if body.get("grant_type") == "refresh_token":
            if body.get("refresh_token") != "rt-1":
                return httpx.Response(400, json={"error": "invalid_grant"})
            return httpx.Response(
                200,
                json={
                    "access_token": "at-2",
                    "token_type": "Bearer",
                    "expires_in": 600,
                    "id_token": self.sign(self.claims(**self.id_claim_overrides)),
                },
            )
        return httpx.Response(400, json={"error": "unsupported_grant_type"})


def basic_credentials(request: httpx.Request) -> tuple[str, str]:
    """Decode client_secret_basic the way RFC 6749 section 2.3.1 prescribes."""
    scheme, _, value = request.headers["Authorization"].partition(" ")
    assert scheme == "Basic"
    user, _, password = base64.b64decode(value).decode("ascii").partition(":")
    return unquote_plus(user), unquote_plus(password)
