"""The test directory itself: slapd answers, people and groups are there, binds check passwords."""

from __future__ import annotations

import subprocess

from tests.directory.slapd import PEOPLE, SERVICE_DN, SERVICE_PW


def _search(slapd, filt: str, *attrs: str) -> str:
    return subprocess.run(
        ["ldapsearch", "-x", "-LLL", "-H", slapd.url, "-D", SERVICE_DN, "-w", SERVICE_PW, "-b", PEOPLE, filt, *attrs],
        capture_output=True,
        text=True,
        check=True,
        timeout=20,
    ).stdout


def test_seeded_people_have_a_stable_entry_uuid(slapd):
    out = _search(slapd, "(uid=mei)", "entryUUID", "mail")
    assert "mail: mei@example.edu" in out
    assert "entryUUID: " in out


def test_a_person_binds_with_their_password_only(slapd):
    dn = f"uid=tom,{PEOPLE}"
    ok = subprocess.run(["ldapwhoami", "-x", "-H", slapd.url, "-D", dn, "-w", "tom-pw"], capture_output=True)
    bad = subprocess.run(["ldapwhoami", "-x", "-H", slapd.url, "-D", dn, "-w", "nope"], capture_output=True)
    assert ok.returncode == 0 and bad.returncode != 0
