"""The local copies of directory people in the store (on SQLite and PostgreSQL) and the
CAMPUSID_LDAP_* settings' checks."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from campusid.idp.directory import Directory, stable_id
from campusid.idp.directory_settings import DirectorySettings
from campusid.idp.settings import SettingsError, load_settings
from campusid.idp.store import open_store
from campusid.idp.store.directory import DIRECTORY, NO_LOCAL_PASSWORD, directory_user_id
from campusid.idp.store.errors import Conflict
from campusid.idp.store.rows import User
from tests.directory.conftest import ldap_env

EXTERNAL_ID = "0b8a7c9e-1111-4222-8333-944455556666"
# A directory person's local user, as the directory maps an entry (directory.Person.user)
KAI = User(
    id=directory_user_id(EXTERNAL_ID),
    username="kai",
    name="Kai",
    given_name=None,
    family_name=None,
    email="kai@example.edu",
    student_number="S9",
    role="student",
    password_hash=NO_LOCAL_PASSWORD,
    created_at=1,
    source=DIRECTORY,
    external_id=EXTERNAL_ID,
)


@pytest.fixture
def store(idp_env, tmp_path):
    s = open_store(idp_env["CAMPUSID_DATABASE_URL"], tmp_path / "data")
    yield s
    s.close()


def test_first_sign_ins_racing_make_one_copy_and_later_ones_refresh_it(store):
    async def main():
        async with store:
            users = await asyncio.gather(*(store.users.refresh_directory_copy(KAI) for _ in range(8)))
            assert len({u.id for u in users}) == 1
            renamed = dataclasses.replace(KAI, username="kai2", role="admin", email=None, created_at=2)
            after = await store.users.refresh_directory_copy(renamed)
            assert (after.id, after.username, after.role, after.email) == (users[0].id, "kai2", "admin", None)
            assert after.created_at == 1  # created once, refreshed since
            copies = await store.users.directory_copies()
            assert [(c[1], c[2]) for c in copies] == [("kai2", EXTERNAL_ID)]
            # another person whose uid is now taken here: refused, nothing overwritten
            other = dataclasses.replace(
                KAI,
                id=directory_user_id("other-uuid"),
                external_id="other-uuid",
                username="kai2",
                student_number=None,
                created_at=3,
            )
            with pytest.raises(Conflict):
                await store.users.refresh_directory_copy(other)
            assert (await store.users.by_username("kai2")).external_id == EXTERNAL_ID

    asyncio.run(main())


def test_a_directory_name_is_kept_as_the_entry_has_it_within_the_username_limits():
    """The local copy's username follows the accounts' rule for directory names: not trimmed, a
    space inside kept, but at most 64 printable characters, or the entry cannot sign in."""
    directory = Directory(DirectorySettings(urls=("ldap://127.0.0.1:9",), user_base="ou=people,dc=x"))

    def person(uid: str):
        entry = {"uid": [uid.encode()], "entryUUID": [b"6d53522c-7d25-1041-94c3-65a08057d18a"], "cn": [b"X"]}
        return directory._person(f"uid={uid},ou=people,dc=x", entry, uid)  # no role groups: no LDAP call

    for uid in ("mei", "m ei", " mei", "a" * 64):
        assert person(uid).user.username == uid
    for uid in ("a" * 65, "mei\u202e", "m\u00a0ei"):
        assert person(uid) is None, repr(uid)


def test_object_guid_reads_as_the_usual_guid_text():
    raw = bytes.fromhex("6b29fc40ca471067b31d00dd010662da")
    assert stable_id("objectGUID", raw) == "40fc296b-47ca-6710-b31d-00dd010662da"
    assert stable_id("entryUUID", b"6d53522c-7d25-1041-94c3-65a08057d18a") == "6d53522c-7d25-1041-94c3-65a08057d18a"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"CAMPUSID_LDAP_URL": "http://ldap.example.edu"}, "ldap://host"),
        ({"CAMPUSID_LDAP_USER_BASE": ""}, "CAMPUSID_LDAP_USER_BASE is required"),
        ({"CAMPUSID_LDAP_USER_FILTER": "(uid=*)"}, "{username}"),
        ({"CAMPUSID_LDAP_USER_FILTER": "(|(uid={username})(mail={username}))"}, "once"),
        ({"CAMPUSID_LDAP_TIMEOUT": "soon"}, "CAMPUSID_LDAP_TIMEOUT"),
        ({"CAMPUSID_LDAP_TIMEOUT": "0"}, "between"),
        ({"CAMPUSID_LDAP_ROLE_GROUPS": "owner=cn=x"}, "admin=<group DN>"),
        ({"CAMPUSID_LDAP_CA_FILE": "/nonexistent/ca.pem"}, "not a file"),
        ({"CAMPUSID_LDAP_START_TLS": "maybe"}, "true or false"),
        ({"CAMPUSID_LDAP_ATTR_ID": "entry UUID"}, "not an attribute name"),
        ({"CAMPUSID_LDAP_BIND_PASSWORD_FILE": "/nonexistent/pw"}, "cannot be read"),
    ],
)
def test_settings_that_cannot_work_fail_at_start_with_a_message(idp_env, overrides, message):
    with pytest.raises(SettingsError) as caught:
        load_settings({**idp_env, **ldap_env("ldap://127.0.0.1:389", **overrides)})
    assert message in str(caught.value)


def test_settings_read_every_value(idp_env, tmp_path):
    (tmp_path / "pw").write_text("s3cret\n")
    cfg = load_settings(
        {
            **idp_env,
            **ldap_env(
                "ldaps://a.example.edu ldap://b.example.edu:3389",
                CAMPUSID_LDAP_BIND_PASSWORD_FILE=str(tmp_path / "pw"),
                CAMPUSID_LDAP_USER_FILTER="(&(objectClass=user)(sAMAccountName={username}))",
                CAMPUSID_LDAP_ATTR_ID="objectGUID",
                CAMPUSID_LDAP_START_TLS="true",
            ),
        }
    ).directory
    assert cfg.urls == ("ldaps://a.example.edu", "ldap://b.example.edu:3389")
    assert cfg.bind_password == "s3cret" and cfg.start_tls and cfg.attr_id == "objectGUID"
    assert cfg.login_attribute == "sAMAccountName" and cfg.timeout == 3.0
    assert [role for role, _ in cfg.role_groups] == ["admin", "developer"]
    assert load_settings(idp_env).directory is None
