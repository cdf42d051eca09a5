"""What reaches the directory, read from slapd's own operation log: one search and one bind per
sign-in over kept connections, and a hostile username only ever as an escaped value (RFC 4515)."""

from __future__ import annotations

import re

from tests.idp.helpers import post_login


def _operations(log: str) -> list[str]:
    return re.findall(r" (SRCH base=.*|BIND dn=.* method=.*|ACCEPT from.*)$", log, flags=re.M)


def test_a_sign_in_is_one_search_and_one_bind_over_kept_connections(make_idp, logging_slapd):
    idp = make_idp(logging_slapd.url, CAMPUSID_LDAP_ROLE_GROUPS="")
    with idp.client() as browser:
        assert post_login(browser, "mei", "mei-pw").status_code == 303  # connections made
        seen = len(_operations(logging_slapd.log))
        assert post_login(browser, "tom", "tom-pw").status_code == 303
        new = _operations(logging_slapd.log)[seen:]
    assert [op.split()[0] for op in new] == ["SRCH", "BIND"], new
    assert 'filter="(uid=tom)"' in new[0] and "uid=tom,ou=people" in new[1]


def test_hostile_usernames_reach_slapd_only_escaped(make_idp, logging_slapd):
    idp = make_idp(logging_slapd.url)
    with idp.client() as browser:
        for name in ("admin)(uid=*", "*", "a*b", "\\00"):
            assert post_login(browser, name, "mei-pw").status_code == 401
    filters = re.findall(r'filter="([^"]*)"', logging_slapd.log)
    people = [f for f in filters if f.startswith("(uid=")]
    assert people == ["(uid=admin\\29\\28uid=\\2A)", "(uid=\\2A)", "(uid=a\\2Ab)", "(uid=\\5C00)"], people
