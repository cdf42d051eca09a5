"""How a directory account (LDAP / AD) maps to its local copy: the copy's id and its markers.

The copy's id is derived from the entry's stable identifier (entryUUID / objectGUID), never from
the username, so a renamed uid keeps the same account and the same pairwise `sub` (OIDC Core 8.1).
Its password hash is a marker no password verifies: the password is the directory's, never stored.
The copies' statements are the users repository's (store/users.py).
"""

from __future__ import annotations

import hashlib

DIRECTORY = "directory"
# Not an argon2 hash: no password ever verifies against it (the directory checks passwords).
NO_LOCAL_PASSWORD = "!directory"


def directory_user_id(external_id: str) -> str:
    """The local id of the directory entry whose stable identifier is `external_id`."""
    return hashlib.sha256(b"campusid directory user\0" + external_id.encode()).hexdigest()[:32]
