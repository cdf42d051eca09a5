"""What the directory sign-in does with hostile usernames (RFC 4515 escaping, no entry but the
one named, never a 500), with no directory server answering (503 within the timeout), with the
first of two servers down (failover), and the login frequency limit counted before the directory
is asked."""

from __future__ import annotations

import os
import signal
import time

import pytest

from campusid.idp.directory import escape_filter_value, matched_name, usable_username, user_filter
from tests.conftest import free_port
from tests.directory.helpers import web_sign_in
from tests.idp.helpers import login_form, post_login

# each with the password of some other entry: none may sign in, none may fail with a 500
HOSTILE = [
    ("*", "mei-pw"),
    ("admin)(uid=*", "mei-pw"),
    ("*)(|(uid=*", "mei-pw"),
    ("\\00", "mei-pw"),
    ("\x00", "mei-pw"),
    ("mei\x00", "mei-pw"),
    ("a*b", "axb-pw"),  # `a*b` as a pattern would match axb
    ("m*", "mei-pw"),
    (" mei", "mei-pw"),
    ("mei ", "mei-pw"),
    ("mei  ", "mei-pw"),
    ("m ei", "mei-pw"),
    ("x" * 10_000, "mei-pw"),
    ("\ud800", "mei-pw"),
    ("mei\u202e", "mei-pw"),
]


def test_rfc4515_escaping_keeps_every_value_an_equality_match():
    assert escape_filter_value("admin)(uid=*") == "admin\\29\\28uid=\\2a"
    assert escape_filter_value("\\00") == "\\5c00"
    assert escape_filter_value("a*b\x00") == "a\\2ab\\00"
    assert user_filter("(&(objectClass=person)(sAMAccountName={username}))", "*") == (
        "(&(objectClass=person)(sAMAccountName=\\2a))"
    )
    assert matched_name(["mei"], " mei ") is None and matched_name(["mei"], "MEI") == "mei"
    assert not usable_username("\x00") and not usable_username("\ud800") and not usable_username("x" * 257)


@pytest.mark.parametrize(("username", "password"), HOSTILE, ids=[repr(u[:12]) for u, _ in HOSTILE])
def test_hostile_usernames_never_sign_in_as_another_entry_and_never_500(dir_idp, username, password):
    with dir_idp.client() as browser:
        try:
            r = post_login(browser, username, password)
        except UnicodeEncodeError:  # a lone surrogate cannot even be sent as UTF-8: send its bytes
            action, fields = login_form(browser)
            body = "&".join(f"{k}={v}" for k, v in fields.items()).encode() + b"&username=%ED%A0%80&password=mei-pw"
            r = browser.post(action, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code in (400, 401), (r.status_code, r.text[:300])
        assert "campusid_session" not in browser.cookies
    assert [u.username for u in dir_idp.db.users.list() if u.source == "directory"] == []


def test_non_utf8_bytes_in_the_form_are_a_400(dir_idp):
    with dir_idp.client() as browser:
        action, fields = login_form(browser)
        body = "&".join(f"{k}={v}" for k, v in fields.items()).encode() + b"&username=m%FF%FEei&password=mei-pw"
        r = browser.post(action, content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
        assert r.status_code == 400 and "<form" in r.text


def test_a_literal_star_in_a_uid_signs_in_only_that_entry(dir_idp):
    web_sign_in(dir_idp, "a*b", "star-pw")
    assert dir_idp.db.users.by_username("a*b").name == "Star In Name"
    assert dir_idp.db.users.by_username("axb") is None


def _timed_login(idp, username="mei", password="mei-pw"):
    with idp.client() as browser:
        started = time.monotonic()
        r = post_login(browser, username, password)
        return r, time.monotonic() - started


def test_slapd_stopped_the_login_page_answers_503_with_a_message(make_idp, own_slapd):
    idp = make_idp(own_slapd.url, CAMPUSID_LDAP_TIMEOUT="2")
    assert _timed_login(idp)[0].status_code == 303  # a live connection is kept in the pool
    own_slapd.stop()
    r, took = _timed_login(idp)
    assert r.status_code == 503, r.text[:300]
    assert "directory cannot be reached" in r.text and r.headers["Retry-After"]
    assert took < 2 + 3
    # local accounts keep working while the directory is down
    from tests.idp.helpers import PASSWORD

    assert _timed_login(idp, "alice", PASSWORD)[0].status_code == 303


@pytest.mark.serial
def test_slapd_hung_the_login_page_answers_503_within_the_timeout(make_idp, own_slapd):
    idp = make_idp(own_slapd.url, CAMPUSID_LDAP_TIMEOUT="2")
    assert _timed_login(idp)[0].status_code == 303
    os.kill(own_slapd.proc.pid, signal.SIGSTOP)  # accepts connections (the kernel does), answers nothing
    try:
        r, took = _timed_login(idp)
    finally:
        os.kill(own_slapd.proc.pid, signal.SIGCONT)
    assert r.status_code == 503, r.text[:300]
    assert took < 2 * 2 + 3, took  # the search's timeout, then a reconnect that skips the server


def test_the_first_url_down_and_the_second_up_sign_in_works(make_idp, slapd):
    idp = make_idp(f"ldap://127.0.0.1:{free_port()} {slapd.url}")
    tokens = web_sign_in(idp, "mei", "mei-pw")
    assert tokens["claims"]["sub"]


def test_no_server_at_all_is_a_503_not_a_500(make_idp):
    idp = make_idp(f"ldap://127.0.0.1:{free_port()} ldap://127.0.0.1:{free_port()}")
    r, took = _timed_login(idp)
    assert r.status_code == 503 and took < 5


def test_the_login_limit_counts_before_the_directory_is_asked(make_idp, own_slapd):
    idp = make_idp(own_slapd.url, CAMPUSID_LIMIT_FAILED_PER_ACCOUNT="2/15 minutes")
    for _ in range(2):
        assert _timed_login(idp, "mei", "wrong")[0].status_code == 401
    own_slapd.stop()
    # over the limit: refused before any directory call (it would be a 503 now otherwise)
    r, _ = _timed_login(idp, "mei", "mei-pw")
    assert r.status_code == 429, (r.status_code, r.text[:300])


def test_a_search_the_directory_refuses_is_a_503_not_a_500(make_idp, slapd):
    # a base that is not a DN: slapd answers invalidDNSyntax, which is a configuration to fix
    idp = make_idp(slapd.url, CAMPUSID_LDAP_USER_BASE="not a dn")
    r, _ = _timed_login(idp)
    assert r.status_code == 503 and "directory cannot be reached" in r.text
