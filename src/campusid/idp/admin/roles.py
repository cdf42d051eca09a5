"""Users and roles, as administrators manage them from the console and the API."""

from __future__ import annotations

from campusid.idp.apps import Forbidden, NotFound, ValidationFailed
from campusid.idp.store import Store

ROLES = ("student", "developer", "admin")


def list_users(store: Store) -> list[dict]:
    return [
        {"username": u["username"], "name": u["name"], "role": u["role"], "student_number": u["student_number"]}
        for u in store.users.list()
    ]


def change_role(store: Store, username: str, role: str, by: str) -> dict:
    """Give `username` a new role. Only admins may; an admin cannot demote themselves, so the
    console always keeps at least the admin who is using it."""
    actor = store.users.by_username(by)
    if actor is None or actor["role"] != "admin":
        raise Forbidden("only administrators change roles")
    if role not in ROLES:
        raise ValidationFailed(f"role must be one of {', '.join(ROLES)}")
    user = store.users.by_username(username)
    if user is None:
        raise NotFound(f"no user {username!r}")
    if user["id"] == actor["id"] and role != "admin":
        raise Forbidden("you cannot remove your own administrator role; ask another administrator")
    store.users.set_role(user["id"], role)
    return {"username": user["username"], "name": user["name"], "role": role, "student_number": user["student_number"]}
