"""Proof Key for Code Exchange, S256 only (RFC 7636).

The verifier stays in memory: it is sent only in the body of the token request
(RFC 7636 section 4.5), never in a URL, a log or an exception message.
"""

from __future__ import annotations

import base64
import hashlib
import secrets

VERIFIER_MIN_LENGTH = 43
VERIFIER_MAX_LENGTH = 128


def make_code_verifier() -> str:
    """RFC 7636 section 4.1: 43..128 unreserved characters with at least 256 bits of entropy.

    ``token_urlsafe(64)`` gives 86 characters of [A-Za-z0-9-_] (512 bits from ``secrets``).
    """
    verifier = secrets.token_urlsafe(64)
    assert VERIFIER_MIN_LENGTH <= len(verifier) <= VERIFIER_MAX_LENGTH
    return verifier


def s256_challenge(verifier: str) -> str:
    """RFC 7636 section 4.2: BASE64URL-ENCODE(SHA256(ASCII(code_verifier))) without padding."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
