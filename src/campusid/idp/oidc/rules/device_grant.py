"""The device authorization grant's rules that need neither HTTP nor SQL (RFC 8628).

- The user code (RFC 8628 6.1): 8 characters from 20 consonants, shown and sent as `XXXX-XXXX`.
  No vowels, so no word (polite or not) can appear; no digits, so nothing reads as 0/O or 1/I.
  20^8 ≈ 2^34.6 combinations, of which only the few live codes can match; with guesses counted
  against the per-IP limit (RFC 8628 5.1) a brute force has no chance.
- Typed codes are normalised before comparison (RFC 8628 6.1: "case-insensitive ... ignore
  punctuation"): Unicode compatibility forms (full-width letters and spaces that a Chinese input
  method produces), case, spaces and dashes are ignored.
- The user code is stored only as an HMAC under a key derived from CAMPUSID_SECRET_KEY: with
  ~2^34 combinations a plain digest could be reversed by trying them all.
- The device code carries 256 random bits and is stored as its SHA-256 digest, like every other
  code and token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata

from campusid.idp.crypto import derive_key

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"
SHORT_NAME = "device_code"  # what a review grants (`apps approve --grant-type device_code`)
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
USER_CODE_LENGTH = 8
EXPIRES_IN = 600  # seconds a device code and its user code live (RFC 8628 3.2 expires_in)
INTERVAL = 5  # seconds between polls (RFC 8628 3.2 interval, 3.5)
SLOW_DOWN_STEP = 5  # seconds added to the interval by each slow_down (RFC 8628 3.5)
MAX_TYPED = 64  # characters of a typed user code looked at, before normalising
_IGNORED = frozenset(" \t\r\n-\u2010\u2011\u2012\u2013\u2014\u2212\u30fc")  # spaces and dashes


def user_code_combinations() -> int:
    """How many user codes there are (RFC 8628 6.1 asks for enough entropy)."""
    return len(USER_CODE_ALPHABET) ** USER_CODE_LENGTH


def new_user_code() -> str:
    """A fresh user code in its canonical form (8 letters, no dash)."""
    return "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))


def display(code: str) -> str:
    """The form people read and type: `BCDF-GHJK`."""
    half = USER_CODE_LENGTH // 2
    return f"{code[:half]}-{code[half:]}"


class MalformedUserCode(ValueError):
    """A typed user code that cannot be one: `reason` is empty, too_long or malformed."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def normalize(typed: str) -> str:
    """The canonical form of a typed user code, or MalformedUserCode."""
    if len(typed) > MAX_TYPED:
        raise MalformedUserCode("too_long", "far too long to be a user code")
    folded = unicodedata.normalize("NFKC", typed)
    letters = "".join(ch for ch in folded if ch not in _IGNORED and not ch.isspace()).upper()
    if not letters:
        raise MalformedUserCode("empty", "no user code was entered")
    if len(letters) != USER_CODE_LENGTH or any(ch not in USER_CODE_ALPHABET for ch in letters):
        raise MalformedUserCode("malformed", f"a user code has {USER_CODE_LENGTH} letters of {USER_CODE_ALPHABET}")
    return letters


class UserCodeDigests:
    """HMAC-SHA256 of canonical user codes under a key of their own, derived from the secret key."""

    def __init__(self, secret_key: str) -> None:
        self._key = derive_key(secret_key, "campusid/device-user-code/v1")

    def digest(self, canonical: str) -> str:
        return hmac.new(self._key, canonical.encode("ascii"), hashlib.sha256).hexdigest()
