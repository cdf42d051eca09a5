"""A real slapd per test session (tests/directory/slapd.py): Debian's binary with our own cn=config,
data directory and port, seeded from directory.ldif. Tests that change the directory make their own
people (unique uids) so they never disturb each other."""

from __future__ import annotations

import pytest

from tests.directory.slapd import Slapd, slapd_available


@pytest.fixture(scope="session")
def slapd(tmp_path_factory):
    if not slapd_available():
        pytest.fail("slapd and ldap-utils are needed: scripts/ensure-test-services.sh installs them")
    server = Slapd(tmp_path_factory.mktemp("slapd")).setup().start()
    yield server
    server.cleanup()
