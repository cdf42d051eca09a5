"""Second factors, recovery codes and the account page's reads and changes (a mixin of `Store`).

Each use of a credential that must count once is one conditional statement, so of two workers
presenting the same code at the same time exactly one wins: `use_totp_step` records the TOTP time
step only when it is later than the last one accepted (RFC 6238 5.2: a code is accepted once),
`use_recovery_code` marks an unused code used. The account page's changes (end my other sessions,
remove a connected app) revoke the grants they end and their refresh tokens in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from sqlalchemy import and_, bindparam, delete, exists, insert, or_, select, union, update

from campusid.idp.store.errors import StoreError
from campusid.idp.store.rows import ConnectedApp, Factor, Session
from campusid.idp.store.schema import (
    clients,
    consents,
    factors,
    grants,
    recovery_codes,
    refresh_tokens,
    sessions,
    users,
)

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

# -- the account page ------------------------------------------------------------------------
USER_SESSIONS = (
    select(sessions)
    .where(sessions.c.user_id == bindparam("uid"), sessions.c.expires_at > bindparam("now"))
    .order_by(sessions.c.created_at.desc())
)
SEEN_SESSION = update(sessions).where(sessions.c.id_hash == bindparam("h")).values(last_seen_at=bindparam("now"))
END_OTHER_SESSIONS = (
    delete(sessions)
    .where(sessions.c.user_id == bindparam("uid"), sessions.c.id_hash != bindparam("keep"))
    .returning(sessions.c.sid)
)
# Apps this user consented to, or that hold a grant for them that still stands
# (grants.user_id leads ix_grants_user_id_sid).
_APP_IDS = union(
    select(consents.c.client_id).where(consents.c.user_id == bindparam("uid")),
    select(grants.c.client_id).where(grants.c.user_id == bindparam("uid"), grants.c.revoked_at.is_(None)),
).subquery()
CONNECTED_APPS = (
    select(clients.c.client_id, clients.c.name, consents.c.scope)
    .select_from(
        _APP_IDS.join(clients, clients.c.client_id == _APP_IDS.c.client_id).outerjoin(
            consents, and_(consents.c.client_id == clients.c.client_id, consents.c.user_id == bindparam("uid"))
        )
    )
    .order_by(clients.c.name, clients.c.client_id)
)
_OF_USER_APP = and_(grants.c.user_id == bindparam("uid"), grants.c.client_id == bindparam("cid"))
FORGET_CONSENT = delete(consents).where(
    consents.c.user_id == bindparam("uid"), consents.c.client_id == bindparam("cid")
)
REVOKE_USER_APP_GRANTS = (
    update(grants)
    .where(_OF_USER_APP, grants.c.revoked_at.is_(None))
    .values(revoked_at=bindparam("now"), code_used_at=bindparam("now"))
    .returning(grants.c.id, grants.c.client_id, grants.c.sid)
)
END_USER_APP_REFRESH_TOKENS = (
    update(refresh_tokens)
    .where(refresh_tokens.c.grant_id.in_(select(grants.c.id).where(_OF_USER_APP)), refresh_tokens.c.used_at.is_(None))
    .values(used_at=bindparam("now"))
)

FACTOR_FIELDS = tuple(f.name for f in fields(Factor))


class FactorStore:
    """Second factors, recovery codes and the account page (needs the Store's `db` and `sql`)."""

    def _prepare_factors(self) -> None:
        for name in ("CONFIRMED_FACTORS", "PENDING_TOTP", "PASSKEY_BY_CREDENTIAL"):
            if getattr(self.sql, name).columns != FACTOR_FIELDS:
                raise StoreError(f"{name} does not return the fields of Factor: {FACTOR_FIELDS}")

    async def mfa_context(self, user_id: str) -> tuple[str, bool] | None:
        """(the user's role, whether they have a confirmed factor); None for no such user."""
        row = await self.db.fetch_one(self.sql.MFA_CONTEXT, {"uid": user_id})
        return (row[0], bool(row[1])) if row is not None else None

    async def factors(self, user_id: str) -> list[Factor]:
        """The user's confirmed factors, oldest first."""
        return [Factor(*r) for r in await self.db.fetch_all(self.sql.CONFIRMED_FACTORS, {"uid": user_id})]

    async def start_totp(self, factor: Factor) -> None:
        """Keep `factor` as the user's one TOTP enrolment waiting for its first code (an earlier
        unconfirmed one is dropped)."""
        async with self.db.transaction() as tx:
            await tx.execute(self.sql.DELETE_PENDING_TOTPS, {"uid": factor.user_id})
            await tx.execute(self.sql.INSERT_FACTOR, vars(factor))

    async def pending_totp(self, user_id: str, factor_id: str) -> Factor | None:
        row = await self.db.fetch_one(self.sql.PENDING_TOTP, {"uid": user_id, "fid": factor_id})
        return Factor(*row) if row is not None else None

    async def confirm_totp(self, factor_id: str, user_id: str, step: int, now: int, code_hashes: Iterable[str]) -> bool:
        """Confirm the enrolment with its first code's step and replace the user's recovery codes
        by `code_hashes`, together; False when it was confirmed already (or is gone)."""
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(
                self.sql.CONFIRM_TOTP, {"fid": factor_id, "uid": user_id, "step": step, "now": now}
            )
            if row is None:
                return False
            await self._replace_codes(tx, user_id, code_hashes, now)
        return True

    async def replace_recovery_codes(self, user_id: str, code_hashes: Iterable[str], now: int) -> None:
        async with self.db.transaction() as tx:
            await self._replace_codes(tx, user_id, code_hashes, now)

    async def _replace_codes(self, tx, user_id: str, code_hashes: Iterable[str], now: int) -> None:
        await tx.execute(self.sql.DELETE_RECOVERY_CODES, {"uid": user_id})
        rows = [{"user_id": user_id, "code_hash": h, "created_at": now, "used_at": None} for h in code_hashes]
        if rows:
            await tx.execute_many(self.sql.INSERT_RECOVERY_CODE, rows)

    async def use_totp_step(self, factor_id: str, step: int, now: int) -> bool:
        """Record `step` as accepted: True for the one caller that did, False for a step already
        used (or earlier)."""
        values = {"fid": factor_id, "step": step, "now": now}
        return await self.db.fetch_one(self.sql.USE_TOTP_STEP, values) is not None

    async def use_recovery_code(self, user_id: str, code_hash: str, now: int) -> bool:
        values = {"uid": user_id, "h": code_hash, "now": now}
        return await self.db.fetch_one(self.sql.USE_RECOVERY_CODE, values) is not None

    async def recovery_codes_left(self, user_id: str) -> int:
        return len(await self.db.fetch_all(self.sql.RECOVERY_CODES_LEFT, {"uid": user_id}))

    async def add_passkey(self, factor: Factor) -> None:
        """Raises Conflict when the credential is registered already."""
        await self.db.execute(self.sql.INSERT_FACTOR, vars(factor))

    async def passkey_by_credential(self, credential_id: str) -> Factor | None:
        row = await self.db.fetch_one(self.sql.PASSKEY_BY_CREDENTIAL, {"cred": credential_id})
        return Factor(*row) if row is not None else None

    async def passkey_ids(self, user_id: str) -> list[str]:
        return [r[0] for r in await self.db.fetch_all(self.sql.USER_PASSKEY_IDS, {"uid": user_id})]

    async def use_passkey(self, factor_id: str, old_count: int, new_count: int, now: int) -> bool:
        values = {"fid": factor_id, "old": old_count, "new": new_count, "now": now}
        return await self.db.fetch_one(self.sql.USE_PASSKEY, values) is not None

    async def remove_factor(self, factor_id: str, user_id: str) -> str | None:
        """Remove one of the user's factors (its kind), and the recovery codes with the last one."""
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(self.sql.DELETE_FACTOR, {"fid": factor_id, "uid": user_id})
            if row is None:
                return None
            if not await tx.fetch_all(self.sql.CONFIRMED_FACTORS, {"uid": user_id}):
                await tx.execute(self.sql.DELETE_RECOVERY_CODES, {"uid": user_id})
        return row[0]

    async def reset_factors(self, user_id: str) -> list[str]:
        """Remove every factor and recovery code of the user (a lost phone); the kinds removed."""
        async with self.db.transaction() as tx:
            kinds = [r[0] for r in await tx.fetch_all(self.sql.DELETE_USER_FACTORS, {"uid": user_id})]
            await tx.execute(self.sql.DELETE_RECOVERY_CODES, {"uid": user_id})
        return kinds

    # -- the account page ------------------------------------------------------------------
    async def user_sessions(self, user_id: str, now: int) -> list[Session]:
        return [Session(*r) for r in await self.db.fetch_all(self.sql.USER_SESSIONS, {"uid": user_id, "now": now})]

    async def seen_session(self, id_hash: str, now: int) -> None:
        await self.db.execute(self.sql.SEEN_SESSION, {"h": id_hash, "now": now})

    async def end_other_sessions(self, user_id: str, keep_hash: str, now: int) -> list[str]:
        """End every session of the user but `keep_hash`, each with the grants issued in it; the
        sids that ended."""
        s = self.sql
        async with self.db.transaction() as tx:
            sids = [r[0] for r in await tx.fetch_all(s.END_OTHER_SESSIONS, {"uid": user_id, "keep": keep_hash})]
            for sid in sids:  # each app told, as for any session that ends (store/logout.py)
                session = {"uid": user_id, "sid": sid}
                await self._enqueue_logout_notices(tx, "ENQUEUE_SESSION_LOGOUT_NOTICES", session, now)
                await tx.execute(s.REVOKE_SESSION_GRANTS, {**session, "now": now})
                await tx.execute(s.END_SESSION_REFRESH_TOKENS, {**session, "now": now})
        return sids

    async def connected_apps(self, user_id: str) -> list[ConnectedApp]:
        return [ConnectedApp(*r) for r in await self.db.fetch_all(self.sql.CONNECTED_APPS, {"uid": user_id})]

    async def remove_connected_app(self, user_id: str, client_id: str, now: int) -> int:
        """Forget the user's consent to the app and revoke every grant it holds for them (codes,
        access and refresh tokens), together; how many grants were revoked."""
        key = {"uid": user_id, "cid": client_id, "now": now}
        async with self.db.transaction() as tx:
            await tx.execute(self.sql.FORGET_CONSENT, {"uid": user_id, "cid": client_id})
            revoked = await tx.fetch_all(self.sql.REVOKE_USER_APP_GRANTS, key)
            await tx.execute(self.sql.END_USER_APP_REFRESH_TOKENS, key)
        return len(revoked)
