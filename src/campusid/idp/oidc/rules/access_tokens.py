"""Validating our own JWT access tokens (RFC 9068 4) for userinfo and the records API.

The algorithm is pinned to ES256 and `typ` to at+jwt; the signature is checked against our
published ES256 key the `kid` names (protocol/jws.py); then `iss`, `exp`, the scope and the
audience. Bearer errors follow RFC 6750 3.1.

A token presented again (a client calls userinfo, or the desktop app the records API, with the
token of one sign-in) is not verified again while its key is still published (VerifiedTokens,
one per app's validator); every other check runs on every request.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict

from campusid.idp.keys import ACCESS_TOKEN_ALG, KeyManager
from campusid.idp.oidc.errors import InsufficientScope, InvalidToken
from campusid.idp.oidc.rules import jws
from campusid.idp.store import Store
from campusid.idp.store.rows import TokenSubject

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
    issuer can fill it; bounded, the oldest entry leaves first. One per validator (per app)."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._entries: OrderedDict[str, tuple[str, dict]] = OrderedDict()

    def get(self, token: str, keys: KeyManager) -> dict | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        kid, claims = entry
        if not keys.published_key(kid, ACCESS_TOKEN_ALG):
            self.forget(token)
            return None
        return claims

    def put(self, token: str, kid: str, claims: dict) -> None:
        self._entries[token] = (kid, claims)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def forget(self, token: str) -> None:
        self._entries.pop(token, None)

    def __len__(self) -> int:
        return len(self._entries)


class AccessTokenValidator:
    """What a resource server of this IdP uses: validate an access token for an audience and a
    scope, then resolve the grant and user behind it through the store. Built once per app."""

    def __init__(self, keys: KeyManager, store: Store, issuer: str, cache_size: int = 4096) -> None:
        self.keys = keys
        self.issuer = issuer
        self._store = store
        self.verified = VerifiedTokens(cache_size)

    async def _verified_claims(self, token: str) -> dict:
        """The claims of a token whose ES256 signature our published key `kid` verifies."""
        try:
            header, signing_input, payload, signature = jws.split_compact(token)
        except ValueError:
            raise InvalidToken("the access token is malformed") from None
        if header.get("alg") != ACCESS_TOKEN_ALG or header.get("typ") != ACCESS_TOKEN_TYP:
            raise InvalidToken("the access token is not an ES256 at+jwt")
        kid = header.get("kid")
        key = await self.keys.verification_key(kid, ACCESS_TOKEN_ALG) if isinstance(kid, str) else None
        if key is None or not jws.es256_valid(key, signing_input, signature):
            raise InvalidToken("the access token signature is not valid")
        try:
            claims = json.loads(payload)
        except (ValueError, UnicodeError, RecursionError):
            raise InvalidToken("the access token is malformed") from None
        if not isinstance(claims, dict):
            raise InvalidToken("the access token is malformed")
        self.verified.put(token, kid, claims)
        return claims

    async def validate(self, token: str, audience: str, scope: str | None = None) -> dict:
        """Verify a JWT access token (RFC 9068 4) and return its claims; the scope is checked
        before the audience (RFC 6750 3.1: insufficient_scope, else invalid_token)."""
        claims = self.verified.get(token, self.keys)
        if claims is None:
            claims = await self._verified_claims(token)
        claims = dict(claims)  # the cached claims stay as verified
        now = int(time.time())
        if claims.get("iss") != self.issuer:
            raise InvalidToken("the access token was issued by another issuer")
        exp = claims.get("exp")
        if not isinstance(exp, int) or exp + LEEWAY < now:
            self.verified.forget(token)
            raise InvalidToken("the access token has expired")
        if scope is not None and scope not in str(claims.get("scope", "")).split():
            raise InsufficientScope(f"the access token lacks the scope {scope}")
        aud = claims.get("aud")
        auds = aud if isinstance(aud, list) else [aud]
        if audience not in auds:
            raise InvalidToken("the access token is not for this audience")
        if not isinstance(claims.get("gid"), str) or not isinstance(claims.get("sub"), str):
            raise InvalidToken("the access token is malformed")
        return claims

    async def subject(self, claims: dict) -> TokenSubject:
        """The grant behind validated claims, with its user, read through the store (one statement)."""
        subject = await self._store.grants.token_subject(claims["gid"])
        self.check_grant(claims, subject.client_id if subject is not None else None)
        return subject

    @staticmethod
    def check_grant(claims: dict, grant_client_id: str | None) -> None:
        """The token's grant must still stand (None: unknown or revoked, as a replayed code or a
        revocation leaves it) and be the token's client's."""
        if grant_client_id is None or grant_client_id != claims.get("client_id"):
            raise InvalidToken("the access token has been revoked")
