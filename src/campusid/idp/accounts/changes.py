"""What an admin changes on an account: disable and enable it (`campusid users disable|enable
USERNAME --by ADMIN`), reset its second factors (`campusid users mfa-reset`).

Disabling is one transaction in the store: the account is marked, every session of it ends and
every grant is revoked (codes, access and refresh tokens: userinfo and the records API refuse its
access tokens at once, since they check the grant). The result names the sessions and grants that
ended, so the apps that hold them can be told. A disabled account cannot sign in, whatever the
password; enabling it lets it sign in again (nothing ended comes back).
"""

from __future__ import annotations

from dataclasses import dataclass

from campusid.idp import events as ev
from campusid.idp.accounts.errors import AccountError
from campusid.idp.events import Events
from campusid.idp.store import Store
from campusid.idp.store.rows import Ended, User


@dataclass(frozen=True)
class AccountChange:
    user: User
    changed: bool  # False: it was in that state already
    ended: Ended | None = None

    def as_json(self) -> dict:
        out = {"username": self.user.username, "disabled": self.user.disabled, "changed": self.changed}
        if self.ended is not None:
            out["sessions_ended"] = len(self.ended.sids)
            out["grants_revoked"] = len(self.ended.grants)
        return out


async def _admin_and_target(
    store: Store, username: str, by: str, own: str = "an admin cannot disable or enable their own account"
) -> tuple[User, User]:
    """The active admin `by` and the account `username` they act on (never their own: `own` says why)."""
    admin = await store.users.by_username(by)
    if admin is None or admin.role != "admin" or admin.disabled:
        raise AccountError(f"--by must name an active admin; {by!r} is not one")
    user = await store.users.by_username(username)
    if user is None:
        raise AccountError(f"no user named {username!r}")
    if user.id == admin.id:
        raise AccountError(own)
    return admin, user


async def disable(store: Store, events: Events, username: str, *, by: str, now: int) -> AccountChange:
    admin, user = await _admin_and_target(store, username, by)
    ended = await store.users.disable(user.id, now)
    if ended is None:
        return AccountChange(user, changed=False)
    await events.record(
        ev.USER_DISABLED,
        username=user.username,
        detail=f"by {admin.username}; {len(ended.sids)} session(s) ended, {len(ended.grants)} grant(s) revoked",
    )
    return AccountChange(await store.users.get(user.id) or user, changed=True, ended=ended)


async def enable(store: Store, events: Events, username: str, *, by: str) -> AccountChange:
    admin, user = await _admin_and_target(store, username, by)
    changed = await store.users.enable(user.id)
    if changed:
        await events.record(ev.USER_ENABLED, username=user.username, detail=f"by {admin.username}")
    return AccountChange(await store.users.get(user.id) or user, changed=changed)


@dataclass(frozen=True)
class FactorReset:
    user: User
    removed: tuple[str, ...]  # the kinds of the factors removed

    def as_json(self) -> dict:
        return {"username": self.user.username, "factors_removed": len(self.removed), "kinds": list(self.removed)}


async def mfa_reset(store: Store, events: Events, username: str, *, by: str) -> FactorReset:
    """Remove every second factor and recovery code of an account (a lost phone), audited as
    `mfa_removed`; the person signs in with their password and sets a factor up again."""
    admin, user = await _admin_and_target(
        store, username, by, own="an admin cannot reset their own second factors; ask another admin"
    )
    removed = tuple(await store.factors.reset(user.id))
    await events.record(
        ev.MFA_REMOVED,
        username=user.username,
        detail=f"reset by {admin.username}; {len(removed)} factor(s) and the recovery codes removed",
    )
    return FactorReset(user, removed)
