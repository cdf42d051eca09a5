"""The devices repository: the device authorization grant's codes (RFC 8628).

A device code (RFC 8628) goes pending → approved or denied (by the person who entered its user
code) → redeemed (by the device, once). Each step that decides something is one conditional
statement, so of any number of concurrent callers on any number of workers exactly one wins:
`decide` (a user code is used once), `redeem` (a device code yields tokens once: the UPDATE …
RETURNING and the grant it starts, through the grants repository, commit together) and `poll`
(of two polls at once, one is on time and the other too early).

A device code carries the sign-in it was approved in, like a code of the code flow: the grant it
starts has that session's `sid` (and ends with the session), and a code whose session has ended
before the device redeemed it (signed out, the account disabled) yields nothing. Expired codes
are the janitor's to purge (store/janitor.py).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, and_, bindparam, exists, insert, or_, select, update

from campusid.idp.store.database import Database, Prepared
from campusid.idp.store.grants import Grants
from campusid.idp.store.repository import Repository, check_columns
from campusid.idp.store.rows import DeviceCode, Grant, SignIn
from campusid.idp.store.schema import device_codes, sessions

PENDING, APPROVED, DENIED, REDEEMED = "pending", "approved", "denied", "redeemed"
_c = device_codes.c
_NOW_MS = bindparam("now_ms", type_=BigInteger())
_LIVE = and_(_c.status == PENDING, _c.expires_at > bindparam("now"))

INSERT_DEVICE_CODE = insert(device_codes)
# The /device page: a user code names a pending, unexpired request, else nothing.
PENDING_DEVICE_CODE_BY_USER_CODE = select(device_codes).where(_c.user_code_hash == bindparam("h"), _LIVE)
PENDING_DEVICE_CODE = select(device_codes).where(_c.id == bindparam("id"), _LIVE)
DECIDE_DEVICE_CODE = (
    update(device_codes)
    .where(_c.id == bindparam("id"), _LIVE)
    .values(
        status=bindparam("to_status", type_=_c.status.type),
        user_id=bindparam("uid", type_=_c.user_id.type),
        auth_time=bindparam("at", type_=_c.auth_time.type),
        sid=bindparam("sid", type_=_c.sid.type),
        amr=bindparam("amr", type_=_c.amr.type),
        acr=bindparam("acr", type_=_c.acr.type),
        decided_at=bindparam("now"),
    )
    .returning(_c.id)
)
# The token endpoint: a device code is only ever found for the client it was issued to.
DEVICE_CODE_OF_CLIENT = select(device_codes).where(
    _c.device_code_hash == bindparam("h"), _c.client_id == bindparam("cid")
)
# A poll is on time when the interval has passed since the last one (RFC 8628 3.5).
POLL_DEVICE_CODE_ON_TIME = (
    update(device_codes)
    .where(
        _c.id == bindparam("id"),
        or_(_c.polled_at_ms.is_(None), _c.polled_at_ms + _c.poll_interval * 1000 <= _NOW_MS),
    )
    .values(polled_at_ms=_NOW_MS)
    .returning(_c.poll_interval)
)
# Too early: slow_down, and the interval grows "for this and all subsequent requests" (3.5).
SLOW_DOWN_DEVICE_CODE = (
    update(device_codes)
    .where(_c.id == bindparam("id"))
    .values(polled_at_ms=_NOW_MS, poll_interval=_c.poll_interval + bindparam("step", type_=_c.poll_interval.type))
    .returning(_c.poll_interval)
)
REDEEM_DEVICE_CODE = (
    update(device_codes)
    .where(
        _c.device_code_hash == bindparam("h"),
        _c.client_id == bindparam("cid"),
        _c.status == APPROVED,
        _c.expires_at > bindparam("now"),
        exists().where(sessions.c.sid == _c.sid, sessions.c.expires_at > bindparam("now")),
    )
    .values(status=REDEEMED, redeemed_at=bindparam("now"))
    .returning(*device_codes.c)
)


class Devices(Repository):
    def __init__(self, db: Database, grants: Grants) -> None:
        super().__init__(db)
        self._grants = grants
        self._insert = db.prepare("INSERT_DEVICE_CODE", INSERT_DEVICE_CODE)
        # Checked at start: each statement returning device codes returns DeviceCode's fields.
        self._pending_by_user_code = check_columns(
            db.prepare("PENDING_DEVICE_CODE_BY_USER_CODE", PENDING_DEVICE_CODE_BY_USER_CODE), DeviceCode
        )
        self._pending = check_columns(db.prepare("PENDING_DEVICE_CODE", PENDING_DEVICE_CODE), DeviceCode)
        self._decide = db.prepare("DECIDE_DEVICE_CODE", DECIDE_DEVICE_CODE)
        self._of_client = check_columns(db.prepare("DEVICE_CODE_OF_CLIENT", DEVICE_CODE_OF_CLIENT), DeviceCode)
        self._poll_on_time = db.prepare("POLL_DEVICE_CODE_ON_TIME", POLL_DEVICE_CODE_ON_TIME)
        self._slow_down = db.prepare("SLOW_DOWN_DEVICE_CODE", SLOW_DOWN_DEVICE_CODE)
        self._redeem = check_columns(db.prepare("REDEEM_DEVICE_CODE", REDEEM_DEVICE_CODE), DeviceCode)

    async def _device_code(self, q: Prepared, values: dict) -> DeviceCode | None:
        row = await self.db.fetch_one(q, values)
        return DeviceCode(*row) if row is not None else None

    async def create(self, code: DeviceCode) -> None:
        """Raises Conflict when the user code (or device code) is already taken."""
        await self.db.execute(self._insert, vars(code))

    async def pending_by_user_code(self, user_code_hash: str, now: int) -> DeviceCode | None:
        return await self._device_code(self._pending_by_user_code, {"h": user_code_hash, "now": now})

    async def pending(self, code_id: str, now: int) -> DeviceCode | None:
        return await self._device_code(self._pending, {"id": code_id, "now": now})

    async def decide(self, code_id: str, status: str, sign_in: SignIn, now: int) -> bool:
        """Approve or deny a pending, unexpired device code in `sign_in`; True for the one caller
        whose decision counted (a user code is used once)."""
        if status not in (APPROVED, DENIED):
            raise ValueError(f"a device code is approved or denied, not {status!r}")
        values = {
            "id": code_id,
            "to_status": status,
            "uid": sign_in.user_id,
            "at": sign_in.auth_time,
            "sid": sign_in.sid,
            "amr": sign_in.amr,
            "acr": sign_in.acr,
            "now": now,
        }
        return await self.db.fetch_one(self._decide, values) is not None

    async def of_client(self, device_code_hash: str, client_id: str) -> DeviceCode | None:
        """The device code if it exists and was issued to `client_id` (whatever its status)."""
        return await self._device_code(self._of_client, {"h": device_code_hash, "cid": client_id})

    async def poll(self, code_id: str, now_ms: int, step: int) -> int | None:
        """Record a poll. None when it came at least the interval after the previous one;
        otherwise the interval, grown by `step` seconds, that the device must now keep."""
        if await self.db.fetch_one(self._poll_on_time, {"id": code_id, "now_ms": now_ms}) is not None:
            return None
        row = await self.db.fetch_one(self._slow_down, {"id": code_id, "now_ms": now_ms, "step": step})
        return int(row[0]) if row is not None else None

    async def redeem(
        self, device_code_hash: str, client_id: str, now: int, grant_id: str
    ) -> tuple[DeviceCode, Grant] | None:
        """Mark an approved, unexpired device code of `client_id` redeemed and start the grant its
        tokens belong to, together; None for every caller but the one whose UPDATE matched, and
        when the session it was approved in has ended.

        The grant has no authorization code (nothing to redeem again), no redirect_uri and no
        PKCE challenge: the device code was its only credential."""
        values = {"h": device_code_hash, "cid": client_id, "now": now}
        async with self.db.transaction() as tx:
            row = await tx.fetch_one(self._redeem, values)
            if row is None:
                return None
            code = DeviceCode(*row)
            grant = Grant(
                id=grant_id,
                code_hash=None,
                client_id=code.client_id,
                user_id=code.user_id,
                redirect_uri="",
                code_challenge="",
                nonce=None,
                scope=code.scope,
                auth_time=code.auth_time,
                created_at=now,
                code_expires_at=now,
                code_used_at=now,
                revoked_at=None,
                sid=code.sid,
                amr=code.amr,
                acr=code.acr,
            )
            await self._grants.insert(tx, grant)
        return code, grant
