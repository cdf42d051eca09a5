"""A user's second factors: TOTP enrolment (secret sealed at rest, QR code made here), checking a
code (TOTP once per time step, or a single-use recovery code) and removing factors.

The rules themselves (what a code looks like, the TOTP window, the sign-in a factor makes) are in
protocol/mfa.py; this module keeps them with the store. Rate limits are the caller's (the pages
count wrong codes per account: idp/ratelimit.py).

segno, which draws the QR code, is imported by the first enrolment, not when a worker starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from campusid.idp.crypto import Sealer, new_token
from campusid.idp.signin import mfa
from campusid.idp.store import Store
from campusid.idp.store.factors import TOTP
from campusid.idp.store.rows import Factor, User

SEAL_PURPOSE = "campusid/totp-secrets/v1"


@dataclass(frozen=True)
class Enrolment:
    """A TOTP enrolment waiting for its first code: the factor id the form posts back, the secret
    (base32, shown as text) and the QR code of its otpauth:// URI as a data: URI (an SVG image)."""

    factor_id: str
    secret: str
    qr: str


class SecondFactors:
    def __init__(self, store: Store, secret_key: str, issuer_name: str, clock: Callable[[], float] = time.time):
        self.store = store
        self._sealer = Sealer(secret_key, SEAL_PURPOSE)
        self._digests = mfa.RecoveryCodeDigests(secret_key)
        self.issuer_name = issuer_name
        self.clock = clock

    async def factors(self, user_id: str) -> list[Factor]:
        return await self.store.factors.list(user_id)

    async def has_factor(self, user_id: str) -> bool:
        return bool(await self.store.factors.list(user_id))

    async def start_totp(self, user: User) -> Enrolment:
        secret = mfa.new_totp_secret()
        now = int(self.clock())
        factor = Factor(
            id=new_token(16),
            user_id=user.id,
            kind=TOTP,
            label="Authenticator app",
            secret_enc=self._sealer.seal(secret.encode("ascii")),
            credential_id=None,
            public_key=None,
            sign_count=0,
            last_step=None,
            created_at=now,
            confirmed_at=None,
            last_used_at=None,
        )
        await self.store.factors.start_totp(factor)
        return self._enrolment(user, factor.id, secret)

    async def pending_enrolment(self, user: User, factor_id: str) -> Enrolment | None:
        """The enrolment still waiting for its first code (shown again after a wrong one)."""
        if not factor_id or len(factor_id) > 64:
            return None
        factor = await self.store.factors.pending_totp(user.id, factor_id)
        return self._enrolment(user, factor.id, self._secret(factor)) if factor is not None else None

    def _enrolment(self, user: User, factor_id: str, secret: str) -> Enrolment:
        import segno

        uri = mfa.provisioning_uri(secret, user.username, self.issuer_name)
        return Enrolment(factor_id, secret, segno.make(uri, error="m").svg_data_uri(scale=5, border=2))

    async def confirm_totp(self, user_id: str, factor_id: str, raw_code: str | None) -> list[str] | None:
        """Confirm a pending enrolment with a first code: the new recovery codes (shown once) or
        None when the code is not this secret's current one (or the enrolment is gone)."""
        parsed = mfa.parse_code(raw_code)
        if parsed is None or parsed[0] != "totp" or not factor_id or len(factor_id) > 64:
            return None
        factor = await self.store.factors.pending_totp(user_id, factor_id)
        if factor is None:
            return None
        step = mfa.totp_step(self._secret(factor), parsed[1], self.clock())
        if step is None:
            return None
        codes = mfa.new_recovery_codes()
        hashes = [self._digests.digest(c) for c in codes]
        if not await self.store.factors.confirm_totp(factor.id, user_id, step, int(self.clock()), hashes):
            return None
        return [mfa.show_recovery_code(c) for c in codes]

    async def verify(self, user_id: str, raw_code: str | None) -> str | None:
        """Check a code typed on the second-factor page: the RFC 8176 method it proves ("otp" for
        a TOTP code or a recovery code), or None (malformed, wrong, or already used)."""
        parsed = mfa.parse_code(raw_code)
        if parsed is None:
            return None
        kind, code = parsed
        now = int(self.clock())
        if kind == "recovery":
            return (
                mfa.OTP
                if await self.store.factors.use_recovery_code(user_id, self._digests.digest(code), now)
                else None
            )
        for factor in await self.store.factors.list(user_id):
            if factor.kind != TOTP:
                continue
            step = mfa.totp_step(self._secret(factor), code, now)
            if step is not None and await self.store.factors.use_totp_step(factor.id, step, now):
                return mfa.OTP
        return None

    async def new_recovery_codes(self, user_id: str) -> list[str]:
        codes = mfa.new_recovery_codes()
        await self.store.factors.replace_recovery_codes(
            user_id, [self._digests.digest(c) for c in codes], int(self.clock())
        )
        return [mfa.show_recovery_code(c) for c in codes]

    async def recovery_codes_left(self, user_id: str) -> int:
        return await self.store.factors.recovery_codes_left(user_id)

    async def remove(self, user_id: str, factor_id: str) -> str | None:
        return await self.store.factors.remove(factor_id, user_id)

    async def reset(self, user_id: str) -> list[str]:
        return await self.store.factors.reset(user_id)

    def _secret(self, factor: Factor) -> str:
        return self._sealer.open(factor.secret_enc).decode("ascii")
