"""Validating our own JWT access tokens (RFC 9068 4) for userinfo and the records API.

The algorithm is pinned to ES256 and `typ` to at+jwt; the signature is checked against our
published ES256 key the `kid` names (protocol/jws.py); then `iss`, `exp`, the scope and the
audience. Bearer errors follow RFC 6750 3.1.

A token presented again (a client calls userinfo, or the desktop app the records API, with the
token of one sign-in) is not verified again while its key is still published (VerifiedTokens);
every other check runs on every request.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict

from campusid.idp.keys import ACCESS_TOKEN_ALG, KeyManager
from campusid.idp.protocol import jws
from campusid.idp.protocol.errors import InsufficientScope, InvalidToken

LEEWAY = 30
ACCESS_TOKEN_TYP = "at+jwt"  # RFC 9068 2.1


def bearer_token(authorization: str | None) -> str | None:
    """The token of `Authorization: Bearer <token>` (RFC 6750 2.1); None when no header.

    A malformed header raises InvalidToken.
    """
    if authorization is None:
        return None
    scheme, _, value = authorization.partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value or " " in value or len(value) > 8192:
        raise InvalidToken("the Authorization header is not a Bearer token")
    return value


class VerifiedTokens:
    """Access tokens whose signature verified: the token's exact text -> the `kid` that verified
    it and its claims. An entry counts only while that kid is still a published ES256 key (kids
    are random and never reused, so the kid names the same key material for good); a retired
    key's tokens are verified again, and refused. Only verified tokens enter, so nobody but the
    issuer can fill it; bounded, the oldest entry leaves first."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._entries: OrderedDict[str, tuple[str, dict]] = OrderedDict()

    def get(self, token: str, keys: KeyManager) -> dict | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        kid, claims = entry
        if keys.verification_key(kid, ACCESS_TOKEN_ALG) is None:
            self.forget(token)
            return None
        return claims

    def put(self, token: str, kid: str, claims: dict) -> None:
        self._entries[token] = (kid, claims)
        while len(self._entries) > self._size:
            try:
                self._entries.popitem(last=False)
            except KeyError:  # emptied meanwhile by another thread
                break

    def forget(self, token: str) -> None:
        self._entries.pop(token, None)

    def __len__(self) -> int:
        return len(self._entries)


VERIFIED = VerifiedTokens()


def _verified_claims(token: str, keys: KeyManager) -> dict:
    """The claims of a token whose ES256 signature our published key `kid` verifies."""
    try:
        header, signing_input, payload, signature = jws.split_compact(token)
    except ValueError:
        raise InvalidToken("the access token is malformed") from None
    if header.get("alg") != ACCESS_TOKEN_ALG or header.get("typ") != ACCESS_TOKEN_TYP:
        raise InvalidToken("the access token is not an ES256 at+jwt")
    kid = header.get("kid")
    key = keys.verification_key(kid, ACCESS_TOKEN_ALG) if isinstance(kid, str) else None
    if key is None or not jws.es256_valid(key, signing_input, signature):
        raise InvalidToken("the access token signature is not valid")
    try:
        claims = json.loads(payload)
    except (ValueError, UnicodeError, RecursionError):
        raise InvalidToken("the access token is malformed") from None
    if not isinstance(claims, dict):
        raise InvalidToken("the access token is malformed")
    VERIFIED.put(token, kid, claims)
    return claims


def validate(token: str, keys: KeyManager, issuer: str, audience: str, required_scope: str | None = None) -> dict:
    """Verify a JWT access token and return its claims; scope is checked before audience."""
    claims = VERIFIED.get(token, keys)
    if claims is None:
        claims = _verified_claims(token, keys)
    claims = dict(claims)  # the cached claims stay as verified
    now = int(time.time())
    if claims.get("iss") != issuer:
        raise InvalidToken("the access token was issued by another issuer")
    exp = claims.get("exp")
    if not isinstance(exp, int) or exp + LEEWAY < now:
        VERIFIED.forget(token)
        raise InvalidToken("the access token has expired")
    if required_scope is not None and required_scope not in str(claims.get("scope", "")).split():
        raise InsufficientScope(f"the access token lacks the scope {required_scope}")
    aud = claims.get("aud")
    auds = aud if isinstance(aud, list) else [aud]
    if audience not in auds:
        raise InvalidToken("the access token is not for this audience")
    if not isinstance(claims.get("gid"), str) or not isinstance(claims.get("sub"), str):
        raise InvalidToken("the access token is malformed")
    return claims
