"""Adding a local account (`campusid users add`, the demo's users): the one way one is made."""

from __future__ import annotations

import uuid

from campusid.idp.accounts.errors import Taken
from campusid.idp.accounts.rules import check_new_user
from campusid.idp.passwords import Passwords
from campusid.idp.store import Conflict, Store
from campusid.idp.store.rows import User


async def add_user(
    store: Store,
    passwords: Passwords,
    *,
    username: str,
    name: str,
    password: str,
    role: str = "student",
    student_number: str | None = None,
    given_name: str | None = None,
    family_name: str | None = None,
    email: str | None = None,
    now: int,
) -> User:
    """Add a local user with a new id and the password hashed. The values are checked against the
    rules first (InvalidAccount, nothing written); a username or student number another account
    holds is Taken, which names the one that is."""
    check_new_user(
        username=username,
        password=password,
        role=role,
        name=name,
        given_name=given_name,
        family_name=family_name,
        email=email,
        student_number=student_number,
    )
    user = User(
        id=uuid.uuid4().hex,
        username=username,
        name=name,
        given_name=given_name,
        family_name=family_name,
        email=email,
        student_number=student_number,
        role=role,
        password_hash=passwords.hash(password),
        created_at=now,
    )
    try:
        return await store.users.add(user)
    except Conflict:
        # The database says only that a unique value is taken; asked after the fact, so a name
        # taken a moment ago by another process is named as well. The id is new (122 random bits).
        if await store.users.by_username(username) is not None or student_number is None:
            raise Taken("username", username) from None
        raise Taken("student_number", student_number) from None
