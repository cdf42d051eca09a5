"""The fuzzers' in-process IdP (tests/idp/conftest.py), with rate limits no fuzz run reaches (they
are not what is under test: tests/idp/test_ratelimit.py is)."""

import pytest

from tests.idp.conftest import console, idp  # noqa: F401 - the fixtures

LIMITS = {
    "CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT": "1000000/hour",
    "CAMPUSID_LIMIT_TOKEN_PER_CLIENT": "1000000/minute",
    "CAMPUSID_LIMIT_ATTEMPTS_PER_IP": "1000000/minute",
}


@pytest.fixture
def idp_settings():
    return LIMITS
