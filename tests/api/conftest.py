"""A fresh in-process IdP per test with developers, admins and a student (see tests/idp/conftest.py)."""

from __future__ import annotations

import pytest

from tests.idp.conftest import ISSUER, IdP
from tests.idp.helpers import make_user


class Console(IdP):
    def __init__(self, env: dict) -> None:
        super().__init__(env)  # alice (student), dev (developer), admin, two active clients
        make_user(self.store, "dev2", role="developer")
        make_user(self.store, "admin2", role="admin")


@pytest.fixture
def console(idp_env) -> Console:
    instance = Console({**idp_env, "CAMPUSID_ISSUER": ISSUER})
    yield instance
    instance.store.close()
