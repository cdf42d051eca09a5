"""Minting ID tokens (OIDC Core 2) and JWT access tokens (RFC 9068).

One RS256 signature per token response (the ID token); access tokens are ES256, whose only
readers are our own userinfo, records API and desktop app.
"""

from __future__ import annotations

from campusid.idp.crypto import new_token
from campusid.idp.keys import ACCESS_TOKEN_ALG, ID_TOKEN_ALG, KeyManager
from campusid.idp.oidc.rules.access_tokens import ACCESS_TOKEN_TYP
from campusid.idp.oidc.rules.jws import CompactSigner

RECORDS_PATH = "/records"
ID_TOKEN_TYP = "JWT"


def records_audience(issuer: str) -> str:
    return issuer + RECORDS_PATH


class TokenMinter:
    def __init__(self, keys: KeyManager, issuer: str, id_ttl: int, access_ttl: int) -> None:
        self._keys = keys
        self._issuer = issuer
        self._id_ttl = id_ttl
        self._access_ttl = access_ttl
        # One signer per key and token type, its header encoded once; holding the key keeps its
        # id() from being reused. Keys rotate rarely: the map is emptied when it grows.
        self._signers: dict[tuple[int, str], tuple[object, CompactSigner]] = {}

    def _signer(self, alg: str, typ: str, now: int) -> CompactSigner:
        key = self._keys.signing_key(alg, now)
        entry = self._signers.get((id(key), typ))
        if entry is None or entry[0] is not key:
            if len(self._signers) > 16:
                self._signers.clear()
            entry = (key, CompactSigner(alg, key, {"alg": alg, "kid": key.kid, "typ": typ}))
            self._signers[(id(key), typ)] = entry
        return entry[1]

    @property
    def access_ttl(self) -> int:
        return self._access_ttl

    def id_token(
        self,
        *,
        sub: str,
        client_id: str,
        auth_time: int,
        nonce: str | None,
        now: int,
        sid: str | None = None,
        amr: list[str] | None = None,
        acr: str | None = None,
    ) -> str:
        """OIDC Core 2; `sid` (Back-Channel Logout 1.0 2.1), `amr` and `acr` when the grant knows
        them (each the same in every ID token of one grant, refreshed ones included: OIDC Core 12.2)."""
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
        if sid is not None:
            claims["sid"] = sid
        if amr:
            claims["amr"] = amr
        if acr is not None:
            claims["acr"] = acr
        return self._signer(ID_TOKEN_ALG, ID_TOKEN_TYP, now).sign(claims)

    def access_token(
        self, *, sub: str, client_id: str, scopes: list[str], auth_time: int, grant_id: str, now: int
    ) -> str:
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
        return self._signer(ACCESS_TOKEN_ALG, ACCESS_TOKEN_TYP, now).sign(claims)
