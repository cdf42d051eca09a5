"""Users and roles, as administrators manage them from the console and the API."""

from __future__ import annotations

from campusid.i18n import N_
from campusid.idp.accounts.rules import ROLES
from campusid.idp.apps import Forbidden, NotFound, ValidationFailed
from campusid.idp.store import Store
from campusid.idp.store.rows import User


def user_view(user: User, role: str | None = None) -> dict:
    return {
        "username": user.username,
        "name": user.name,
        "role": role or user.role,
        "student_number": user.student_number,
        "disabled": user.disabled,
        "source": user.source,  # "local" or "directory" (LDAP / AD)
    }


async def list_users(store: Store) -> list[dict]:
    return [user_view(u) for u in await store.users.list()]


async def change_role(store: Store, username: str, role: str, by: str) -> dict:
    """Give `username` a new role. Only admins may; an admin cannot demote themselves, so the
    console always keeps at least the admin who is using it."""
    actor = await store.users.by_username(by)
    if actor is None or actor.role != "admin":
        raise Forbidden(N_("only administrators change roles"))
    if role not in ROLES:
        raise ValidationFailed(N_("role must be one of %(roles)s", roles=", ".join(ROLES)))
    user = await store.users.by_username(username)
    if user is None:
        raise NotFound(N_("no user %(username)r", username=username))
    if user.id == actor.id and role != "admin":
        raise Forbidden(N_("you cannot remove your own administrator role; ask another administrator"))
    await store.users.set_role(user.id, role)
    return user_view(user, role)
