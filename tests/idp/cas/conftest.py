"""The CAS face's tests: the in-process IdP of tests/idp (alice, dev, admin) with one active CAS app."""

from __future__ import annotations

import pytest

from tests.idp.cas.helpers import cas_app


@pytest.fixture
def portal(idp):
    return cas_app(idp)
