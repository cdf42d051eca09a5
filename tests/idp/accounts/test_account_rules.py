"""The account rules (idp/accounts/rules.py), one of each, and add_user on SQLite and PostgreSQL:
the username rule for local and for directory accounts, the password policy's bounds, the
profile's limits, and a taken username or student number named in the error, nothing written."""

from __future__ import annotations

import time

import pytest

from campusid.idp.accounts import InvalidAccount, Taken, add_user, rules
from campusid.idp.passwords import Passwords
from campusid.idp.store import open_store
from tests.idp.helpers import PASSWORD, run

FAST = Passwords(1, 8192, 1)


def test_the_policy_is_ten_to_1024_characters():
    # docs/mfa.md and the README state these numbers; a change here is a change of policy
    assert (rules.MIN_PASSWORD, rules.MAX_PASSWORD, rules.MAX_USERNAME) == (10, 1024, 64)


@pytest.mark.parametrize(
    "password",
    ["x" * rules.MIN_PASSWORD, "x" * rules.MAX_PASSWORD, "密" * rules.MIN_PASSWORD, " " * 4 + "pass phr"],
    ids=["min", "max", "ten-cjk", "spaces-count"],
)
def test_a_password_within_the_bounds_is_taken(password):
    rules.check_password(password)


@pytest.mark.parametrize(
    "password",
    ["", "x" * (rules.MIN_PASSWORD - 1), "x" * (rules.MAX_PASSWORD + 1), "密" * (rules.MIN_PASSWORD - 1)],
    ids=["empty", "min-1", "max+1", "nine-cjk"],  # characters are counted, not UTF-8 bytes (27 here)
)
def test_a_password_outside_the_bounds_is_refused_with_the_bounds(password):
    with pytest.raises(InvalidAccount, match="^the password must be 10 to 1024 characters$"):
        rules.check_password(password)


@pytest.mark.parametrize("username", ["alice", "a" * 64, "李雷", "a[b]", "o'neil", "x.y-z_1"])
def test_a_local_username_is_1_to_64_printable_characters_without_spaces(username):
    rules.check_username(username)


@pytest.mark.parametrize(
    "username",
    ["", "a" * 65, "al ice", " alice", "alice ", "al\tice", "al\x00ice", "mei\u202e", "a\u00a0b", "\ud800"],
    ids=["empty", "65", "space", "leading", "trailing", "tab", "nul", "bidi-override", "nbsp", "surrogate"],
)
def test_any_other_local_username_is_refused(username):
    with pytest.raises(InvalidAccount, match="1-64 printable characters without spaces"):
        rules.check_username(username)


def test_a_directory_username_is_kept_as_typed_within_the_same_limits():
    # the directory decides its names: spaces inside or around are its own, never trimmed here
    for name in ("mei", "m ei", " mei", "a" * 64, "李雷"):
        assert rules.directory_username_fits(name), name
    for name in ("", "a" * 65, "mei\u202e", "m\x00ei", "m\nei"):
        assert not rules.directory_username_fits(name), name


def test_the_role_is_one_of_three():
    for role in rules.ROLES:
        rules.check_role(role)
    with pytest.raises(InvalidAccount, match="student, developer, admin"):
        rules.check_role("root")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": ""}, "the name must be 1-200"),
        ({"name": "   "}, "the name must be 1-200"),
        ({"name": "x" * 201}, "the name must be 1-200"),
        ({"name": "A\x1b[31mB"}, "the name must be 1-200"),
        ({"given_name": ""}, "the given name must be 1-100"),
        ({"family_name": "x" * 101}, "the family name must be 1-100"),
        ({"email": "a b@x.edu"}, "the email address must be 1-254 printable characters without spaces"),
        ({"email": "nobody"}, "has no @"),
        ({"email": "@x.edu"}, "has no @"),
        ({"student_number": "2024 001"}, "the student number must be 1-32 printable characters without spaces"),
        ({"student_number": "1" * 33}, "the student number must be 1-32"),
    ],
)
def test_profile_values_beyond_what_the_table_holds_or_shows_are_refused(fields, message):
    with pytest.raises(InvalidAccount, match=message):
        rules.check_profile(**{"name": "Alice Zhang", **fields})


def test_profile_values_are_taken_as_given():
    rules.check_profile(name="王小明", given_name="小明", family_name="王", email="w@x.edu", student_number="S-1")
    rules.check_profile(name="Mononym")  # no given or family name: both absent


@pytest.fixture
def store(database_url, tmp_path):
    s = open_store(database_url, tmp_path / "data")
    yield s
    s.close()


def _add(store, **fields):
    values = {"username": "alice", "name": "Alice Zhang", "password": PASSWORD, "now": int(time.time()), **fields}
    return run(store, add_user(store, FAST, **values))


def test_add_user_stores_the_names_as_given_with_a_new_id_and_a_hash(store):
    user = _add(store, name="王小明", given_name="小明", family_name="王", email="w@x.edu", student_number="S1")
    again = run(store, store.users.by_username("alice"))
    assert again == user and len(user.id) == 32
    assert (again.name, again.given_name, again.family_name, again.email) == ("王小明", "小明", "王", "w@x.edu")
    assert again.password_hash.startswith("$argon2id$") and FAST.verify(again.password_hash, PASSWORD)
    assert _add(store, username="bob", name="Bob Li").id != user.id


def test_add_user_names_the_taken_username_and_writes_nothing(store):
    _add(store, student_number="2024001")
    with pytest.raises(Taken, match="^a user named 'alice' exists already$") as taken:
        _add(store, name="Someone Else", student_number="2024002")
    assert taken.value.field == "username"
    assert run(store, store.users.by_username("alice")).name == "Alice Zhang"
    assert [u.username for u in run(store, store.users.list())] == ["alice"]


def test_add_user_names_the_taken_student_number_and_writes_nothing(store):
    _add(store, student_number="2024001")
    with pytest.raises(Taken, match="^a user with student number '2024001' exists already$") as taken:
        _add(store, username="bob", student_number="2024001")
    assert taken.value.field == "student_number"
    assert run(store, store.users.by_username("bob")) is None


@pytest.mark.parametrize(
    "fields",
    [{"password": "short"}, {"username": "al ice"}, {"role": "root"}, {"email": "nobody"}],
    ids=["password", "username", "role", "email"],
)
def test_add_user_checks_the_rules_before_it_writes(store, fields):
    with pytest.raises(InvalidAccount):
        _add(store, **fields)
    assert run(store, store.users.list()) == []
