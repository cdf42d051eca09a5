"""`campusid directory check` and `campusid directory sync` against the real slapd: one JSON object
each, clear errors with a non-zero exit; a person deleted in the directory is disabled by sync,
their sessions end, their refresh token stops working and they cannot sign in again."""

from __future__ import annotations

import json
import re

from tests.conftest import free_port, run_cli
from tests.directory.helpers import new_uid
from tests.directory.slapd import GROUPS, PEOPLE
from tests.idp.helpers import auth_params, code_exchange, login_through_pages, post_login

LOOPBACK = "http://127.0.0.1:40001/callback"


def test_check_shows_the_mapped_claims_and_role(dir_idp):
    data = json.loads(run_cli(dir_idp.env, "directory", "check", "tom", "--json").stdout)
    assert data == {
        "username": "tom",
        "dn": f"uid=tom,{PEOPLE}",
        "role": "developer",
        "claims": {
            "name": "Tom Baker",
            "given_name": "Tom",
            "family_name": "Baker",
            "email": "tom@example.edu",
            "student_number": "S1002",
        },
    }
    ok = run_cli(dir_idp.env, "directory", "check", "ada", "--password-stdin", "--json", stdin="ada-pw\n")
    assert json.loads(ok.stdout)["role"] == "admin"


def test_check_says_clearly_what_is_wrong(dir_idp, idp_env):
    env = dir_idp.env
    missing = run_cli(env, "directory", "check", "nobody-here", "--json", check=False)
    assert missing.returncode == 1 and "no single entry" in json.loads(missing.stderr)["error"]
    wrong = run_cli(env, "directory", "check", "mei", "--password-stdin", stdin="nope\n", check=False)
    assert wrong.returncode == 1 and "refused the password" in wrong.stderr and "nope" not in wrong.stderr
    hostile = run_cli(env, "directory", "check", "*", check=False)
    assert hostile.returncode == 1 and "Traceback" not in hostile.stderr
    down = run_cli(
        {**env, "CAMPUSID_LDAP_URL": f"ldap://127.0.0.1:{free_port()}"}, "directory", "check", "mei", check=False
    )
    assert down.returncode == 3 and "cannot be reached" in down.stderr and "Traceback" not in down.stderr
    bad_service = run_cli(
        {**env, "CAMPUSID_LDAP_BIND_PASSWORD": "wrong"}, "directory", "check", "mei", "--json", check=False
    )
    assert bad_service.returncode == 3 and "service account" in json.loads(bad_service.stderr)["error"]
    unset = run_cli(idp_env, "directory", "check", "mei", check=False)
    assert unset.returncode == 2 and "CAMPUSID_LDAP_URL" in unset.stderr
    no_base = {**env}
    del no_base["CAMPUSID_LDAP_USER_BASE"]
    assert run_cli(no_base, "directory", "check", "mei", check=False).returncode == 2
    bad_filter = run_cli({**env, "CAMPUSID_LDAP_USER_FILTER": "(uid=*)"}, "directory", "check", "mei", check=False)
    assert bad_filter.returncode == 2 and "{username}" in bad_filter.stderr


def test_sync_disables_people_gone_from_the_directory_and_ends_everything_they_hold(dir_idp, slapd):
    uid = new_uid("leaver")
    dn = slapd.add_person(uid, "leaver-pw")
    with dir_idp.client() as browser:
        flow = auth_params(dir_idp.native_id, LOOPBACK, scope="openid profile offline_access")
        code = login_through_pages(browser, dir_idp.issuer, flow, uid, "leaver-pw")["code"]
        tokens = browser.post("/oauth/token", data=code_exchange(flow, code, LOOPBACK, dir_idp.native_id)).json()
        assert tokens["refresh_token"]
    run_cli(dir_idp.env, "users", "add", "stays", "--name", "Stays", "--password-stdin", stdin="stays-password\n")
    first = json.loads(run_cli(dir_idp.env, "directory", "sync", "--json").stdout)
    assert first == {"checked": 1, "disabled": [], "errors": []}

    slapd.modify(f"dn: {dn}\nchangetype: delete\n")
    result = json.loads(run_cli(dir_idp.env, "directory", "sync", "--json").stdout)
    assert result == {"checked": 1, "disabled": [uid], "errors": []}
    assert dir_idp.db.users.by_username(uid).disabled
    assert not dir_idp.db.users.by_username("stays").disabled  # local accounts are not the directory's
    (event,) = dir_idp.db.events.list(username=uid, type="user_disabled")
    assert event.detail.startswith("by directory sync") and "1 session(s) ended" in event.detail

    with dir_idp.client() as browser:
        form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": dir_idp.native_id}
        refused = browser.post("/oauth/token", data=form)
        assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
        bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
        assert browser.get("/oauth/userinfo", headers=bearer).status_code == 401
        assert post_login(browser, uid, "leaver-pw").status_code == 401
    again = json.loads(run_cli(dir_idp.env, "directory", "sync", "--json").stdout)
    assert again == {"checked": 1, "disabled": [], "errors": []}  # once is enough


def test_sync_disables_nobody_when_the_directory_returns_nobody(dir_idp):
    with dir_idp.client() as browser:
        assert post_login(browser, "mei", "mei-pw").status_code == 303
    wrong_base = {**dir_idp.env, "CAMPUSID_LDAP_USER_BASE": GROUPS}
    proc = run_cli(wrong_base, "directory", "sync", "--json", check=False)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["disabled"] == [] and "nothing was disabled" in data["errors"][0]
    assert not dir_idp.db.users.by_username("mei").disabled
    down = run_cli(
        {**dir_idp.env, "CAMPUSID_LDAP_URL": f"ldap://127.0.0.1:{free_port()}"}, "directory", "sync", check=False
    )
    assert down.returncode == 1 and "cannot be read" in down.stderr and "Traceback" not in down.stderr


def test_sync_reads_a_directory_larger_than_a_page_and_reports_progress(make_idp, own_slapd):
    people = "".join(
        f"dn: uid=bulk{i:04d},{PEOPLE}\nchangetype: add\nobjectClass: inetOrgPerson\nuid: bulk{i:04d}\n"
        f"cn: Bulk {i}\nsn: Bulk\nuserPassword: bulk-pw\n\n"
        for i in range(1200)
    )
    own_slapd.modify(people)
    idp = make_idp(own_slapd.url)
    with idp.client() as browser:
        for uid in ("bulk1199", "bulk0000", "mei"):
            assert post_login(browser, uid, "mei-pw" if uid == "mei" else "bulk-pw").status_code == 303
    proc = run_cli(idp.env, "directory", "sync")
    counts = [int(n) for n in re.findall(r"read (\d+) directory entries", proc.stderr)]
    assert len(counts) >= 3 and counts == sorted(counts) and counts[-1] >= 1200, proc.stderr
    assert "disabled 0" in proc.stdout
    own_slapd.modify(f"dn: uid=bulk1199,{PEOPLE}\nchangetype: delete\n")
    result = json.loads(run_cli(idp.env, "directory", "sync", "--json").stdout)
    assert result == {"checked": 3, "disabled": ["bulk1199"], "errors": []}
