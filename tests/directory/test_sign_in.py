"""Directory sign-in through the real login form against a real slapd: claims from the entry, a
pairwise sub from entryUUID that survives a uid rename, roles from group membership refreshed at
every sign-in, local accounts beside it, and the password rules."""

from __future__ import annotations

import asyncio

from campusid.idp.directory import Directory
from campusid.idp.directory_settings import DirectorySettings
from campusid.idp.oidc.rules.sector import subject
from campusid.idp.store.directory import directory_user_id
from tests.directory.helpers import entry_uuid, new_uid, web_sign_in
from tests.directory.slapd import ADMINS, PEOPLE
from tests.idp.helpers import PASSWORD, post_login


def test_a_directory_user_signs_in_through_the_login_form_with_claims_from_the_directory(dir_idp, slapd):
    tokens = web_sign_in(dir_idp, "mei", "mei-pw")
    uuid = entry_uuid(slapd, "mei")
    client = dir_idp.db.apps.get(dir_idp.web_id)
    assert tokens["claims"]["sub"] == subject(dir_idp.ctx.pairwise, client, directory_user_id(uuid))
    assert tokens["claims"]["amr"] == ["pwd"]
    with dir_idp.client() as c:
        info = c.get("/oauth/userinfo", headers={"Authorization": f"Bearer {tokens['access_token']}"}).json()
    assert info["sub"] == tokens["claims"]["sub"]
    assert (info["name"], info["given_name"], info["family_name"]) == ("Li Mei", "Mei", "Li")
    assert info["email"] == "mei@example.edu"
    user = dir_idp.db.users.by_username("mei")
    assert (user.source, user.external_id, user.role) == ("directory", uuid, "student")
    assert user.student_number == "S1001"
    assert not dir_idp.db.users.set_password_hash(user.id, "x")  # never a local password


def test_the_same_person_after_a_uid_rename_keeps_the_same_sub(dir_idp, slapd):
    old, new = new_uid("ren"), new_uid("renamed")
    slapd.add_person(old, "rename-pw", cn="Ren Amed")
    before = web_sign_in(dir_idp, old, "rename-pw")["claims"]["sub"]
    slapd.modify(f"dn: uid={old},{PEOPLE}\nchangetype: modrdn\nnewrdn: uid={new}\ndeleteoldrdn: 1\n")
    after = web_sign_in(dir_idp, new, "rename-pw")["claims"]["sub"]
    assert after == before
    assert dir_idp.db.users.by_username(old) is None  # the local copy followed the rename
    assert dir_idp.db.users.by_username(new).external_id == entry_uuid(slapd, new)
    with dir_idp.client() as browser:
        assert post_login(browser, old, "rename-pw").status_code == 401


def _console(dir_idp, username: str, password: str) -> int:
    with dir_idp.client() as browser:
        r = post_login(browser, username, password, next_path="/admin")
        assert r.status_code == 303, r.text[:300]
        return browser.get("/admin").status_code


def test_admin_group_membership_gives_and_takes_the_console_at_the_next_sign_in(dir_idp, slapd):
    uid = new_uid("staff")
    dn = slapd.add_person(uid, "staff-pw")
    assert _console(dir_idp, uid, "staff-pw") == 403
    slapd.modify(f"dn: {ADMINS}\nchangetype: modify\nadd: member\nmember: {dn}\n")
    assert _console(dir_idp, uid, "staff-pw") == 200
    assert dir_idp.db.users.by_username(uid).role == "admin"
    slapd.modify(f"dn: {ADMINS}\nchangetype: modify\ndelete: member\nmember: {dn}\n")
    assert _console(dir_idp, uid, "staff-pw") == 403
    assert dir_idp.db.users.by_username(uid).role == "student"


def test_roles_from_groups_and_local_accounts_beside_the_directory(dir_idp):
    web_sign_in(dir_idp, "tom", "tom-pw")
    assert dir_idp.db.users.by_username("tom").role == "developer"
    # alice is a local account (campusid users add): her own password, checked here
    local = web_sign_in(dir_idp, "alice", PASSWORD)
    assert local["claims"]["sub"] and dir_idp.db.users.by_username("alice").source == "local"
    with dir_idp.client() as browser:
        assert post_login(browser, "tom", "wrong").status_code == 401
        assert post_login(browser, "alice", "tom-pw").status_code == 401


def test_a_blank_password_is_refused_before_any_bind(dir_idp):
    # no server at this URL: had anything been asked, the answer would be DirectoryUnavailable
    nowhere = Directory(DirectorySettings(urls=("ldap://127.0.0.1:9",), user_base=PEOPLE, timeout=1))
    try:
        for password in ("", " ", "\t\n"):
            assert asyncio.run(nowhere.authenticate("mei", password)) is None
    finally:
        nowhere.close()
    with dir_idp.client() as browser:
        r = post_login(browser, "mei", "   ")
        assert r.status_code == 401 and "not correct" in r.text
    assert dir_idp.db.users.by_username("mei") is None


def test_the_login_page_and_the_console_show_where_accounts_come_from(dir_idp):
    web_sign_in(dir_idp, "mei", "mei-pw")
    with dir_idp.client() as browser:
        page = browser.get(browser.get("/login").headers["location"])
        assert 'id="account-source"' in page.text and "university account" in page.text
    with dir_idp.client() as browser:
        assert post_login(browser, "admin", PASSWORD, next_path="/admin/users").status_code == 303
        en = browser.get("/admin/users").text
        zh = browser.get("/admin/users", headers={"Accept-Language": "zh-CN"}).text
    mei_row = en[en.index("<code>mei</code>") :].split("</tr>")[0]
    admin_row = en[en.index("<code>admin</code>") :].split("</tr>")[0]
    assert "University directory" in mei_row and "Local account" in admin_row
    assert "学校统一身份目录" in zh and "本地账号" in zh


def test_without_the_directory_its_copies_cannot_sign_in(dir_idp):
    from starlette.testclient import TestClient

    from campusid.idp.app import create_app
    from campusid.idp.settings import load_settings

    web_sign_in(dir_idp, "mei", "mei-pw")
    plain = {k: v for k, v in dir_idp.env.items() if not k.startswith("CAMPUSID_LDAP_")}
    app = create_app(load_settings(plain))
    try:
        with TestClient(app, base_url=dir_idp.issuer, follow_redirects=False) as browser:
            for password in ("mei-pw", "!directory", ""):
                assert post_login(browser, "mei", password).status_code in (400, 401)
            assert post_login(browser, "alice", PASSWORD).status_code == 303  # local accounts still do
    finally:
        app.state.ctx.store.close()
