"""Accounts: the rules their values follow (rules.py: one password policy and one username rule
for the CLI, the pages and the directory's copies), adding a local one (add.py: `add_user`), and
what an admin changes on one (changes.py: disable, enable, reset the second factors).

add.py and changes.py are imported at their first use (`accounts.add_user`, `accounts.disable`):
the rules are read by commands that must start quickly (`campusid users list` imports
admin/roles.py) and by the login page, while add.py brings argon2 and changes.py the events with
their metrics."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from campusid.idp.accounts.errors import AccountError, InvalidAccount, Taken

if TYPE_CHECKING:
    from campusid.idp.accounts.add import add_user
    from campusid.idp.accounts.changes import AccountChange, FactorReset, disable, enable, mfa_reset

_LATER = {
    "add_user": "add",
    "AccountChange": "changes",
    "FactorReset": "changes",
    "disable": "changes",
    "enable": "changes",
    "mfa_reset": "changes",
}

__all__ = [
    "AccountChange",
    "AccountError",
    "FactorReset",
    "InvalidAccount",
    "Taken",
    "add_user",
    "disable",
    "enable",
    "mfa_reset",
]


def __getattr__(name: str):
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
