"""The factors repository: second factors (TOTP, passkeys) and recovery codes.

Each use of a credential that must count once is one conditional statement, so of two workers
presenting the same code at the same time exactly one wins: `use_totp_step` records the TOTP time
step only when it is later than the last one accepted (RFC 6238 5.2: a code is accepted once),
`use_recovery_code` marks an unused code used, `use_passkey` moves a passkey's signature counter
only from the value it was read at. (The account page's sessions and connected apps are the
sessions and grants repositories'.)
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import bindparam, delete, exists, insert, or_, select, update

from campusid.idp.store.database import Database, Queries
from campusid.idp.store.repository import Repository, check_columns
from campusid.idp.store.rows import Factor
from campusid.idp.store.schema import factors, recovery_codes, users

TOTP, PASSKEY = "totp", "passkey"
_f = factors.c
_r = recovery_codes.c

INSERT_FACTOR = insert(factors)
# After the password: the user's role and whether they have a confirmed factor, in one statement.
MFA_CONTEXT = select(
    users.c.role,
    exists().where(_f.user_id == users.c.id, _f.confirmed_at.is_not(None)),
).where(users.c.id == bindparam("uid"))
CONFIRMED_FACTORS = (
    select(factors).where(_f.user_id == bindparam("uid"), _f.confirmed_at.is_not(None)).order_by(_f.created_at)
)
PENDING_TOTP = select(factors).where(
    _f.user_id == bindparam("uid"), _f.kind == TOTP, _f.confirmed_at.is_(None), _f.id == bindparam("fid")
)
DELETE_PENDING_TOTPS = delete(factors).where(_f.user_id == bindparam("uid"), _f.kind == TOTP, _f.confirmed_at.is_(None))
CONFIRM_TOTP = (
    update(factors)
    .where(_f.id == bindparam("fid"), _f.user_id == bindparam("uid"), _f.confirmed_at.is_(None))
    .values(confirmed_at=bindparam("now"), last_step=bindparam("step"), last_used_at=bindparam("now"))
    .returning(_f.id)
)
# A TOTP code counts once: only a step later than the last accepted one is recorded.
USE_TOTP_STEP = (
    update(factors)
    .where(
        _f.id == bindparam("fid"),
        _f.confirmed_at.is_not(None),
        or_(_f.last_step.is_(None), _f.last_step < bindparam("step")),
    )
    .values(last_step=bindparam("step"), last_used_at=bindparam("now"))
    .returning(_f.id)
)
PASSKEY_BY_CREDENTIAL = select(factors).where(_f.credential_id == bindparam("cred"), _f.kind == PASSKEY)
USER_PASSKEY_IDS = select(_f.credential_id).where(_f.user_id == bindparam("uid"), _f.kind == PASSKEY)
# The signature counter only grows (Web Authentication 6.1.1): of two uses of one assertion's
# counter, one matches.
USE_PASSKEY = (
    update(factors)
    .where(_f.id == bindparam("fid"), _f.sign_count == bindparam("old"))
    .values(sign_count=bindparam("new"), last_used_at=bindparam("now"))
    .returning(_f.id)
)
DELETE_FACTOR = delete(factors).where(_f.id == bindparam("fid"), _f.user_id == bindparam("uid")).returning(_f.kind)
DELETE_USER_FACTORS = delete(factors).where(_f.user_id == bindparam("uid")).returning(_f.kind)

INSERT_RECOVERY_CODE = insert(recovery_codes)
DELETE_RECOVERY_CODES = delete(recovery_codes).where(_r.user_id == bindparam("uid"))
USE_RECOVERY_CODE = (
    update(recovery_codes)
    .where(_r.user_id == bindparam("uid"), _r.code_hash == bindparam("h"), _r.used_at.is_(None))
    .values(used_at=bindparam("now"))
    .returning(_r.code_hash)
)
RECOVERY_CODES_LEFT = select(_r.code_hash).where(_r.user_id == bindparam("uid"), _r.used_at.is_(None))


class Factors(Repository):
    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self._insert = db.prepare("INSERT_FACTOR", INSERT_FACTOR)
        self._mfa_context = db.prepare("MFA_CONTEXT", MFA_CONTEXT)
        # Checked at start: each statement returning factors returns Factor's fields.
        self._confirmed = check_columns(db.prepare("CONFIRMED_FACTORS", CONFIRMED_FACTORS), Factor)
        self._pending_totp = check_columns(db.prepare("PENDING_TOTP", PENDING_TOTP), Factor)
        self._delete_pending_totps = db.prepare("DELETE_PENDING_TOTPS", DELETE_PENDING_TOTPS)
        self._confirm_totp = db.prepare("CONFIRM_TOTP", CONFIRM_TOTP)
        self._use_totp_step = db.prepare("USE_TOTP_STEP", USE_TOTP_STEP)
        self._passkey_by_credential = check_columns(db.prepare("PASSKEY_BY_CREDENTIAL", PASSKEY_BY_CREDENTIAL), Factor)
        self._passkey_ids = db.prepare("USER_PASSKEY_IDS", USER_PASSKEY_IDS)
        self._use_passkey = db.prepare("USE_PASSKEY", USE_PASSKEY)
        self._delete = db.prepare("DELETE_FACTOR", DELETE_FACTOR)
        self._delete_of_user = db.prepare("DELETE_USER_FACTORS", DELETE_USER_FACTORS)
        self._insert_recovery_code = db.prepare("INSERT_RECOVERY_CODE", INSERT_RECOVERY_CODE)
        self._delete_recovery_codes = db.prepare("DELETE_RECOVERY_CODES", DELETE_RECOVERY_CODES)
        self._use_recovery_code = db.prepare("USE_RECOVERY_CODE", USE_RECOVERY_CODE)
        self._recovery_codes_left = db.prepare("RECOVERY_CODES_LEFT", RECOVERY_CODES_LEFT)

    async def mfa_context(self, user_id: str) -> tuple[str, bool] | None:
        """(the user's role, whether they have a confirmed factor); None for no such user."""
        row = await self.db.fetch_one(self._mfa_context, {"uid": user_id})
        return (row[0], bool(row[1])) if row is not None else None

    async def list(self, user_id: str) -> list[Factor]:
        """The user's confirmed factors, oldest first."""
        return [Factor(*r) for r in await self.db.fetch_all(self._confirmed, {"uid": user_id})]

    async def start_totp(self, factor: Factor) -> None:
        """Keep `factor` as the user's one TOTP enrolment waiting for its first code (an earlier
        unconfirmed one is dropped)."""
        async with self.db.transaction() as tx:
            await tx.execute(self._delete_pending_totps, {"uid": factor.user_id})
            await tx.execute(self._insert, vars(factor))

    async def pending_totp(self, user_id: str, factor_id: str) -> Factor | None:
        row = await self.db.fetch_one(self._pending_totp, {"uid": user_id, "fid": factor_id})
        return Factor(*row) if row is not None else None

    async def confirm_totp(self, factor_id: str, user_id: str, step: int, now: int, code_hashes: Iterable[str]) -> bool:
        """Confirm the enrolment with its first code's step and replace the user's recovery codes
        by `code_hashes`, together; False when it was confirmed already (or is gone)."""
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(self._confirm_totp, {"fid": factor_id, "uid": user_id, "step": step, "now": now})
            if row is None:
                return False
            await self._replace_codes(tx, user_id, code_hashes, now)
        return True

    async def replace_recovery_codes(self, user_id: str, code_hashes: Iterable[str], now: int) -> None:
        async with self.db.transaction() as tx:
            await self._replace_codes(tx, user_id, code_hashes, now)

    async def _replace_codes(self, tx: Queries, user_id: str, code_hashes: Iterable[str], now: int) -> None:
        await tx.execute(self._delete_recovery_codes, {"uid": user_id})
        rows = [{"user_id": user_id, "code_hash": h, "created_at": now, "used_at": None} for h in code_hashes]
        if rows:
            await tx.execute_many(self._insert_recovery_code, rows)

    async def use_totp_step(self, factor_id: str, step: int, now: int) -> bool:
        """Record `step` as accepted: True for the one caller that did, False for a step already
        used (or earlier)."""
        values = {"fid": factor_id, "step": step, "now": now}
        return await self.db.fetch_one(self._use_totp_step, values) is not None

    async def use_recovery_code(self, user_id: str, code_hash: str, now: int) -> bool:
        values = {"uid": user_id, "h": code_hash, "now": now}
        return await self.db.fetch_one(self._use_recovery_code, values) is not None

    async def recovery_codes_left(self, user_id: str) -> int:
        return len(await self.db.fetch_all(self._recovery_codes_left, {"uid": user_id}))

    async def add_passkey(self, factor: Factor) -> None:
        """Raises Conflict when the credential is registered already."""
        await self.db.execute(self._insert, vars(factor))

    async def passkey_by_credential(self, credential_id: str) -> Factor | None:
        row = await self.db.fetch_one(self._passkey_by_credential, {"cred": credential_id})
        return Factor(*row) if row is not None else None

    async def passkey_ids(self, user_id: str) -> list[str]:
        return [r[0] for r in await self.db.fetch_all(self._passkey_ids, {"uid": user_id})]

    async def use_passkey(self, factor_id: str, old_count: int, new_count: int, now: int) -> bool:
        values = {"fid": factor_id, "old": old_count, "new": new_count, "now": now}
        return await self.db.fetch_one(self._use_passkey, values) is not None

    async def remove(self, factor_id: str, user_id: str) -> str | None:
        """Remove one of the user's factors (its kind), and the recovery codes with the last one."""
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(self._delete, {"fid": factor_id, "uid": user_id})
            if row is None:
                return None
            if not await tx.fetch_all(self._confirmed, {"uid": user_id}):
                await tx.execute(self._delete_recovery_codes, {"uid": user_id})
        return row[0]

    async def reset(self, user_id: str) -> list[str]:
        """Remove every factor and recovery code of the user (a lost phone); the kinds removed."""
        async with self.db.transaction() as tx:
            kinds = [r[0] for r in await tx.fetch_all(self._delete_of_user, {"uid": user_id})]
            await tx.execute(self._delete_recovery_codes, {"uid": user_id})
        return kinds
