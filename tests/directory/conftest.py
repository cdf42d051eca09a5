"""A real slapd per test session (tests/directory/slapd.py): Debian's binary with our own cn=config,
data directory and port, seeded from directory.ldif. Tests that change the directory make their own
people (unique uids) so they never disturb each other."""

from __future__ import annotations

import pytest

from tests.directory.slapd import ADMINS, DEVELOPERS, PEOPLE, SERVICE_DN, SERVICE_PW, Slapd, slapd_available
from tests.idp.conftest import ISSUER, IdP


@pytest.fixture(scope="session")
def slapd(tmp_path_factory):
    if not slapd_available():
        pytest.fail("slapd and ldap-utils are needed: scripts/ensure-test-services.sh installs them")
    server = Slapd(tmp_path_factory.mktemp("slapd")).setup().start()
    yield server
    server.cleanup()


def ldap_env(url: str, **overrides: str) -> dict[str, str]:
    """CAMPUSID_LDAP_* for the test directory (OpenLDAP's defaults: uid, entryUUID)."""
    env = {
        "CAMPUSID_LDAP_URL": url,
        "CAMPUSID_LDAP_BIND_DN": SERVICE_DN,
        "CAMPUSID_LDAP_BIND_PASSWORD": SERVICE_PW,
        "CAMPUSID_LDAP_USER_BASE": PEOPLE,
        "CAMPUSID_LDAP_ROLE_GROUPS": f"admin={ADMINS};developer={DEVELOPERS}",
        "CAMPUSID_LDAP_TIMEOUT": "3",
    }
    env.update(overrides)
    return env


class DirectoryIdP(IdP):
    def close(self) -> None:
        self.store.close()
        if self.ctx.directory is not None:
            self.ctx.directory.close()


@pytest.fixture
def make_idp(idp_env):
    """An in-process IdP (tests/idp's: local alice, dev, admin, a native and a web app) signing in
    against the directory at `url`."""
    made = []

    def make(url: str, **overrides: str) -> DirectoryIdP:
        env = {**idp_env, "CAMPUSID_ISSUER": ISSUER, **ldap_env(url, **overrides)}
        instance = DirectoryIdP(env)
        instance.env = env  # for the campusid command on the same database
        made.append(instance)
        return instance

    yield make
    for instance in made:
        instance.close()


@pytest.fixture
def dir_idp(make_idp, slapd):
    return make_idp(slapd.url)


@pytest.fixture
def own_slapd(tmp_path):
    """A slapd of this test's own, for tests that stop it."""
    server = Slapd(tmp_path / "slapd").setup().start()
    yield server
    server.cleanup()


@pytest.fixture(scope="session")
def tls_slapd(tmp_path_factory):
    """A slapd with a server certificate from a CA the tests made: ldaps:// and StartTLS on ldap://.
    Yields (server, CA file, a CA file of another authority)."""
    from tests.directory.tls import make_ca, make_server_cert

    pki = tmp_path_factory.mktemp("pki")
    ca_file, ca_cert, ca_key = make_ca(pki, "Test Campus CA")
    other_ca, _, _ = make_ca(pki, "Some Other CA")
    server = Slapd(tmp_path_factory.mktemp("slapd-tls"), tls=make_server_cert(pki, ca_cert, ca_key)).setup().start()
    yield server, str(ca_file), str(other_ca)
    server.cleanup()


@pytest.fixture
def logging_slapd(tmp_path):
    """A slapd of this test's own that logs every operation it is asked (-d stats)."""
    server = Slapd(tmp_path / "slapd", debug="stats").setup().start()
    yield server
    server.cleanup()
