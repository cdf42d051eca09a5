"""LDAPS and StartTLS against slapd with a certificate from a CA the test made: with that CA in
CAMPUSID_LDAP_CA_FILE sign-in works; with another authority's CA the connection is refused and
`directory check` says it was the certificate."""

from __future__ import annotations

import json

import pytest

from tests.conftest import run_cli
from tests.directory.helpers import web_sign_in
from tests.idp.helpers import post_login


def test_ldaps_with_the_ca_file_signs_in(make_idp, tls_slapd):
    server, ca, _ = tls_slapd
    idp = make_idp(server.ldaps_url, CAMPUSID_LDAP_CA_FILE=ca)
    assert web_sign_in(idp, "mei", "mei-pw")["claims"]["sub"]
    assert idp.db.users.by_username("mei").source == "directory"


def test_start_tls_with_the_ca_file_signs_in(make_idp, tls_slapd):
    server, ca, _ = tls_slapd
    idp = make_idp(server.url, CAMPUSID_LDAP_START_TLS="true", CAMPUSID_LDAP_CA_FILE=ca)
    assert web_sign_in(idp, "tom", "tom-pw")["claims"]["sub"]
    check = run_cli(idp.env, "directory", "check", "tom", "--password-stdin", "--json", stdin="tom-pw\n")
    assert json.loads(check.stdout)["role"] == "developer"


@pytest.mark.parametrize("mode", ["ldaps", "starttls"])
def test_a_certificate_from_another_ca_is_refused_with_a_clear_message(make_idp, tls_slapd, mode):
    server, _, other_ca = tls_slapd
    url, start_tls = (server.ldaps_url, "false") if mode == "ldaps" else (server.url, "true")
    idp = make_idp(url, CAMPUSID_LDAP_START_TLS=start_tls, CAMPUSID_LDAP_CA_FILE=other_ca)
    proc = run_cli(idp.env, "directory", "check", "mei", "--json", check=False)
    assert proc.returncode == 3, proc.stderr
    error = json.loads(proc.stderr)["error"]
    assert "cannot be reached" in error and "certificate was refused" in error, error
    with idp.client() as browser:
        r = post_login(browser, "mei", "mei-pw")
        assert r.status_code == 503 and "directory cannot be reached" in r.text
    assert idp.db.users.by_username("mei") is None
