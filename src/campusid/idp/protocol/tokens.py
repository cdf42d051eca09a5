"""Minting ID tokens (OIDC Core 2) and JWT access tokens (RFC 9068).

One RS256 signature per token response (the ID token); access tokens are ES256, whose only
readers are our own userinfo, records API and desktop app (DESIGN 3.4).
"""

from __future__ import annotations

import json

from joserfc import jws
from joserfc.jws import JWSRegistry

from campusid.idp.crypto import new_token
from campusid.idp.keys import ACCESS_TOKEN_ALG, ID_TOKEN_ALG, KeyManager

RECORDS_PATH = "/records"
# Built once: joserfc would otherwise construct a registry for every token it signs.
_REGISTRY = JWSRegistry(algorithms=[ID_TOKEN_ALG, ACCESS_TOKEN_ALG])
_claims_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _sign(header: dict, claims: dict, key) -> str:
    """A JWT as a JWS Compact Serialization (RFC 7519 7.1), signed by joserfc."""
    return jws.serialize_compact(header, _claims_json(claims).encode("utf-8"), key, registry=_REGISTRY)


def records_audience(issuer: str) -> str:
    return issuer + RECORDS_PATH


class TokenMinter:
    def __init__(self, keys: KeyManager, issuer: str, id_ttl: int, access_ttl: int) -> None:
        self._keys = keys
        self._issuer = issuer
        self._id_ttl = id_ttl
        self._access_ttl = access_ttl

    @property
    def access_ttl(self) -> int:
        return self._access_ttl

    def id_token(self, *, sub: str, client_id: str, auth_time: int, nonce: str | None, now: int) -> str:
        key = self._keys.signing_key(ID_TOKEN_ALG, now)
        claims = {
            "iss": self._issuer,
            "sub": sub,
            "aud": client_id,
            "exp": now + self._id_ttl,
            "iat": now,
            "auth_time": auth_time,
        }
        if nonce is not None:
            claims["nonce"] = nonce
        return _sign({"alg": ID_TOKEN_ALG, "kid": key.kid, "typ": "JWT"}, claims, key)

    def access_token(
        self, *, sub: str, client_id: str, scopes: list[str], auth_time: int, grant_id: str, now: int
    ) -> str:
        key = self._keys.signing_key(ACCESS_TOKEN_ALG, now)
        aud: str | list[str] = self._issuer
        if "grades.read" in scopes:
            aud = [self._issuer, records_audience(self._issuer)]
        claims = {
            "iss": self._issuer,
            "sub": sub,
            "aud": aud,
            "client_id": client_id,
            "exp": now + self._access_ttl,
            "iat": now,
            "auth_time": auth_time,
            "jti": new_token(16),
            "scope": " ".join(scopes),
            "gid": grant_id,
        }
        return _sign({"alg": ACCESS_TOKEN_ALG, "kid": key.kid, "typ": "at+jwt"}, claims, key)
