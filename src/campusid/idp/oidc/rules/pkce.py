"""PKCE (RFC 7636) with S256 only: `plain` or a missing method is an error, never a default."""

from __future__ import annotations

import hashlib
import re

from campusid.idp.crypto import b64url, equal
from campusid.idp.oidc.errors import InvalidGrant, InvalidRequest

_VERIFIER = re.compile(r"^[A-Za-z0-9\-._~]{43,128}$")
_CHALLENGE = re.compile(r"^[A-Za-z0-9\-_]{43}$")  # base64url of a SHA-256 digest


def check_challenge(challenge: str | None, method: str | None) -> str:
    """RFC 7636 4.3 at the authorization endpoint; returns the challenge to bind to the code."""
    if not challenge:
        raise InvalidRequest("code_challenge is required (PKCE)")
    if method != "S256":
        raise InvalidRequest("code_challenge_method must be S256")
    if not _CHALLENGE.match(challenge):
        raise InvalidRequest("code_challenge must be the base64url SHA-256 of the code_verifier")
    return challenge


def verify(verifier: str | None, challenge: str) -> None:
    """RFC 7636 4.6: BASE64URL(SHA256(verifier)) equals the bound challenge."""
    if not verifier or not _VERIFIER.match(verifier):
        raise InvalidGrant("code_verifier is missing or malformed")
    if not equal(b64url(hashlib.sha256(verifier.encode("ascii")).digest()), challenge):
        raise InvalidGrant("code_verifier does not match the code_challenge")
