"""Second factors: what a code looks like, TOTP verification (RFC 6238), recovery codes, and the
sign-in a second factor makes (`amr`, `acr`: RFC 8176, OIDC Core 2). Whether a sign-in needs one
is decided in signin/policy.py.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import replace

import pyotp

from campusid.idp.crypto import derive_key, equal
from campusid.idp.signin.authn import ACR_MFA
from campusid.idp.store.rows import SignIn

# RFC 6238 4 and 5.2: SHA-1, 6 digits, 30-second steps; one step of drift either way is accepted.
TOTP_PERIOD = 30
TOTP_DIGITS = 6
TOTP_DRIFT = 1
MAX_CODE = 64  # longer input is not a code; it is refused before any work
RECOVERY_CODES = 10
RECOVERY_ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789"  # no 0/O, 1/I/L, U: read aloud and typed back
RECOVERY_LENGTH = 12  # 12 symbols of 30: ~59 bits

# RFC 8176 2: "otp" a one-time password, "hwk"/"swk" a proof of possession of a hardware or
# software key, "mfa" more than one factor.
OTP, HWK, SWK, MFA = "otp", "hwk", "swk", "mfa"


def with_second_factor(sign_in: SignIn, method: str) -> SignIn:
    """The sign-in after a second factor: `amr` gains the method and "mfa" (RFC 8176), `acr`
    becomes urn:campusid:acr:mfa."""
    methods = [m for m in sign_in.methods if m not in (method, MFA)]
    methods += [method] if not methods else [method, MFA]
    return replace(sign_in, amr=" ".join(methods), acr=ACR_MFA)


# -- codes ----------------------------------------------------------------------------------
def parse_code(raw: str | None) -> tuple[str, str] | None:
    """What the user typed in the `code` field: ("totp", six digits), ("recovery", the code in
    canonical form) or None when it is neither (letters in a TOTP, 7 digits, empty, oversized)."""
    if raw is None or len(raw) > MAX_CODE:
        return None
    text = "".join(raw.split())
    if len(text) == TOTP_DIGITS and text.isascii() and text.isdigit():
        return "totp", text
    recovery = text.replace("-", "").upper()
    if len(recovery) == RECOVERY_LENGTH and all(c in RECOVERY_ALPHABET for c in recovery):
        return "recovery", recovery
    return None


def new_totp_secret() -> str:
    """160 random bits in base32 (RFC 4226 4 recommends 160), as authenticator apps read them."""
    return base64.b32encode(secrets.token_bytes(20)).decode("ascii")


def totp_step(secret: str, code: str, now: float) -> int | None:
    """The time step whose code `code` is, within TOTP_DRIFT steps of `now` (RFC 6238 5.2), else
    None. Every candidate is compared, in constant time."""
    totp = pyotp.TOTP(secret, digits=TOTP_DIGITS, interval=TOTP_PERIOD)
    current = int(now) // TOTP_PERIOD
    found = None
    for step in range(current - TOTP_DRIFT, current + TOTP_DRIFT + 1):
        if equal(totp.generate_otp(step), code) and found is None:
            found = step
    return found


def provisioning_uri(secret: str, username: str, issuer_name: str) -> str:
    """The otpauth:// URI an authenticator app reads from the QR code."""
    return pyotp.TOTP(secret, digits=TOTP_DIGITS, interval=TOTP_PERIOD).provisioning_uri(
        name=username, issuer_name=issuer_name
    )


def new_recovery_codes() -> list[str]:
    return ["".join(secrets.choice(RECOVERY_ALPHABET) for _ in range(RECOVERY_LENGTH)) for _ in range(RECOVERY_CODES)]


def show_recovery_code(code: str) -> str:
    return "-".join(code[i : i + 4] for i in range(0, len(code), 4))


class RecoveryCodeDigests:
    """Recovery codes are kept as HMAC-SHA256 under a key derived from the secret key, so a dump
    of the database does not let anyone try candidates offline."""

    def __init__(self, secret_key: str) -> None:
        self._key = derive_key(secret_key, "campusid/recovery-codes/v1")

    def digest(self, canonical_code: str) -> str:
        return hmac.new(self._key, canonical_code.encode("ascii"), hashlib.sha256).hexdigest()
