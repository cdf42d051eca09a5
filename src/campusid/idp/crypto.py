"""Small, named cryptographic building blocks (RFC 9700, the OAuth 2.0 Security BCP).

- `new_token()`: 256 bits from `secrets` for codes, tokens, session ids and client secrets.
- `token_hash()`: what the database keeps of a code, refresh token, session id or client secret
  (SHA-256: these values carry 256 bits of entropy, so a slow hash buys nothing).
- `Sealer`: AES-256-GCM under a key derived from CAMPUSID_SECRET_KEY, for private keys at rest.
- `derive_key()`: HKDF-SHA256 so each purpose of the secret key gets an independent key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def new_token(nbytes: int = 32) -> str:
    return secrets.token_urlsafe(nbytes)


def token_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def equal(a: str | bytes, b: str | bytes) -> bool:
    """Constant-time comparison of two secrets."""
    if isinstance(a, str):
        a = a.encode("utf-8", "surrogatepass")
    if isinstance(b, str):
        b = b.encode("utf-8", "surrogatepass")
    return hmac.compare_digest(a, b)


def derive_key(secret_key: str, purpose: str, length: int = 32) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=b"campusid", info=purpose.encode()).derive(
        secret_key.encode("utf-8")
    )


class Sealer:
    """Authenticated encryption of small blobs (private keys) with a derived AES-256-GCM key."""

    def __init__(self, secret_key: str, purpose: str = "campusid/signing-keys/v1") -> None:
        self._aead = AESGCM(derive_key(secret_key, purpose))
        self._aad = purpose.encode()

    def seal(self, plaintext: bytes) -> bytes:
        nonce = os.urandom(12)
        return nonce + self._aead.encrypt(nonce, plaintext, self._aad)

    def open(self, blob: bytes) -> bytes:
        return self._aead.decrypt(blob[:12], blob[12:], self._aad)
