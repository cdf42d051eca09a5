"""The bridge's "JWT scope" check over a JWKS cached on disk so it works offline.

The session's IdP access token (RFC 9068) must be signed ES256 (the algorithm is pinned, the
header's ``alg`` is never trusted), by a key of the IdP's JWKS, with the canonical issuer and the
records audience; its ``scope`` claim must hold the scope asked for. Expiry is not checked here:
the question is what the signed-in user may read of data already on this machine.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from .errors import InsufficientScope, UpstreamUnavailable

log = logging.getLogger(__name__)

PINNED_ALGORITHM = "ES256"


class JWKSCache:
    """The IdP's public keys, kept in ``path`` and refetched only when a key id is unknown."""

    def __init__(self, path: Path, locate: Callable[[], tuple[str, str]], http: httpx.Client | None = None):
        self._path = path
        self._locate = locate  # () -> (issuer, jwks_uri), asks the IdP's discovery
        self._http = http or httpx.Client(timeout=10.0)
        self._lock = threading.Lock()

    def load(self) -> dict[str, Any] | None:
        try:
            doc = json.loads(self._path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None
        return doc if isinstance(doc, dict) and isinstance(doc.get("jwks"), dict) else None

    def fetch(self) -> dict[str, Any]:
        """Download the JWKS now and keep it on disk (called after each sign-in and on an unknown ``kid``)."""
        with self._lock:
            issuer, jwks_uri = self._locate()
            try:
                response = self._http.get(jwks_uri)
                response.raise_for_status()
                jwks = response.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise UpstreamUnavailable(f"the IdP's JWKS could not be fetched ({type(exc).__name__})") from None
            doc = {"issuer": issuer, "jwks_uri": jwks_uri, "jwks": jwks}
            self._path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._path.with_name(self._path.name + ".tmp")
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            os.replace(tmp, self._path)
            return doc


class ScopeChecker:
    def __init__(self, jwks: JWKSCache, audience: str) -> None:
        self._jwks = jwks
        self._audience = audience

    def require(self, access_token: str, scope: str) -> None:
        """Raise :class:`InsufficientScope` unless ``access_token`` is a genuine token granting ``scope``."""
        claims = self._verified_claims(access_token)
        granted = claims.get("scope")
        if not isinstance(granted, str) or scope not in granted.split():
            raise InsufficientScope(f"the session's access token does not grant {scope}")

    def _verified_claims(self, access_token: str) -> dict[str, Any]:
        doc = self._jwks.load()
        kid = _kid(access_token)
        if doc is None or not _has_kid(doc["jwks"], kid):
            try:
                doc = self._jwks.fetch()
            except UpstreamUnavailable:
                if doc is None:
                    raise
        try:
            keys = KeySet.import_key_set(doc["jwks"])
            token = jwt.decode(access_token, keys, algorithms=[PINNED_ALGORITHM])
        except (JoseError, ValueError, KeyError, TypeError) as exc:
            raise InsufficientScope(f"the session's access token failed verification ({type(exc).__name__})") from None
        if token.header.get("alg") != PINNED_ALGORITHM:
            raise InsufficientScope("the session's access token is not ES256")
        claims = dict(token.claims)
        if claims.get("iss") != doc.get("issuer"):
            raise InsufficientScope("the session's access token has another issuer")
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if self._audience not in audiences:
            raise InsufficientScope("the session's access token is not for the records API")
        return claims


def _kid(token: str) -> str | None:
    try:
        from joserfc.jws import extract_compact

        return extract_compact(token.encode("ascii")).protected.get("kid")
    except Exception:
        return None


def _has_kid(jwks: dict[str, Any], kid: str | None) -> bool:
    keys = jwks.get("keys") if isinstance(jwks, dict) else None
    if not isinstance(keys, list):
        return False
    return any(isinstance(k, dict) and (kid is None or k.get("kid") == kid) for k in keys)
