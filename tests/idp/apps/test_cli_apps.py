"""The review workflow through the CLI: --json output, errors on stderr, non-zero exits."""

import json
from pathlib import Path

import pytest

from campusid.idp.store import open_store
from tests.conftest import run_cli
from tests.idp.helpers import run

PW = "a-long-password\n"


@pytest.fixture
def env(idp_env):
    for user, role in (("dev", "developer"), ("admin", "admin"), ("admin2", "admin")):
        run_cli(
            idp_env,
            "users",
            "add",
            user,
            "--name",
            user.title(),
            "--role",
            role,
            "--password-stdin",
            stdin="a-long-password\n",
        )
    return idp_env


def j(env, *args, stdin=None):
    return json.loads(run_cli(env, *args, "--json", stdin=stdin).stdout)


def test_full_review_workflow_with_feedback(env):
    app = j(
        env,
        "apps",
        "create",
        "--name",
        "Timetable",
        "--type",
        "web",
        "--redirect-uri",
        "https://tt.example.edu/cb",
        "--scope",
        "openid",
        "--scope",
        "profile",
        "--scope",
        "grades.read",
        "--owner",
        "dev",
    )
    cid = app["client_id"]
    assert app["state"] == "draft" and len(app["client_secret"]) >= 43
    assert "client_secret" not in j(env, "apps", "show", cid)  # shown once
    assert j(env, "apps", "submit", cid)["state"] == "under_review"
    rejected = j(env, "apps", "reject", cid, "--by", "admin", "--feedback", "Explain why you need grades.")
    assert rejected["state"] == "rejected"
    assert rejected["history"][-1]["feedback"] == "Explain why you need grades."
    edited = j(
        env,
        "apps",
        "edit",
        cid,
        "--redirect-uri",
        "https://tt.example.edu/callback",
        "--scope",
        "openid",
        "--scope",
        "profile",
    )
    assert edited["state"] == "rejected" and edited["redirect_uris"] == ["https://tt.example.edu/callback"]
    assert j(env, "apps", "submit", cid)["state"] == "under_review"
    assert j(env, "apps", "approve", cid, "--by", "admin")["state"] == "approved"
    active = j(env, "apps", "activate", cid)
    assert active["state"] == "active" and active["owner"] == "dev"
    assert [h["to"] for h in active["history"]] == [
        "draft",
        "under_review",
        "rejected",
        "rejected",
        "under_review",
        "approved",
        "active",
    ]
    assert j(env, "apps", "suspend", cid, "--by", "admin2")["state"] == "suspended"
    assert j(env, "apps", "reinstate", cid, "--by", "admin2")["state"] == "active"


def test_sensitive_scopes_are_granted_only_by_review(env):
    cid = j(
        env,
        "apps",
        "create",
        "--name",
        "N",
        "--type",
        "native",
        "--redirect-uri",
        "http://127.0.0.1/cb",
        "--scope",
        "openid",
        "--scope",
        "grades.read",
        "--scope",
        "student_number",
        "--owner",
        "dev",
    )["client_id"]
    assert "client_secret" not in j(env, "apps", "show", cid)
    j(env, "apps", "submit", cid)
    approved = j(env, "apps", "approve", cid, "--by", "admin", "--grant-scope", "grades.read")
    assert "grades.read" in approved["granted_scopes"] and "student_number" not in approved["granted_scopes"]


@pytest.mark.parametrize(
    ("steps", "bad", "message"),
    [
        ([], ["apps", "approve", "{cid}", "--by", "admin"], "cannot approve"),
        ([["apps", "submit", "{cid}"]], ["apps", "edit", "{cid}", "--name", "x"], "cannot edit"),
        (
            [["apps", "submit", "{cid}"], ["apps", "reject", "{cid}", "--by", "admin", "--feedback", "no"]],
            ["apps", "activate", "{cid}"],
            "cannot activate",
        ),
        ([["apps", "submit", "{cid}"]], ["apps", "approve", "{cid}", "--by", "dev"], "not an admin"),
        ([["apps", "submit", "{cid}"]], ["apps", "reject", "{cid}", "--by", "admin", "--feedback", " "], "feedback"),
    ],
)
def test_forbidden_transitions_fail_and_change_nothing(env, steps, bad, message):
    cid = j(
        env,
        "apps",
        "create",
        "--name",
        "A",
        "--type",
        "native",
        "--redirect-uri",
        "http://127.0.0.1/cb",
        "--owner",
        "dev",
    )["client_id"]
    for step in steps:
        j(env, *[s.format(cid=cid) for s in step])
    before = j(env, "apps", "show", cid)
    proc = run_cli(env, *[s.format(cid=cid) for s in bad], check=False)
    assert proc.returncode != 0
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert j(env, "apps", "show", cid) == before
    proc = run_cli(env, *[s.format(cid=cid) for s in bad], "--json", check=False)
    assert proc.returncode != 0 and message in json.loads(proc.stderr)["error"]


def test_nobody_approves_their_own_app(env):
    cid = j(
        env,
        "apps",
        "create",
        "--name",
        "Mine",
        "--type",
        "native",
        "--redirect-uri",
        "http://127.0.0.1/cb",
        "--owner",
        "admin",
    )["client_id"]
    j(env, "apps", "submit", cid)
    proc = run_cli(env, "apps", "approve", cid, "--by", "admin", check=False)
    assert proc.returncode != 0 and "own" in proc.stderr


@pytest.mark.parametrize(
    ("uri", "kind"),
    [
        ("http://example.edu/cb", "web"),
        ("https://example.edu/cb#frag", "web"),
        ("https://*.example.edu/cb", "web"),
        ("http://localhost/cb", "native"),
        ("https://app.example/cb", "native"),
        ("myapp:/cb", "native"),
        ("not a uri", "web"),
    ],
)
def test_redirect_uris_are_validated_at_registration(env, uri, kind):
    proc = run_cli(
        env, "apps", "create", "--name", "X", "--type", kind, "--redirect-uri", uri, "--owner", "dev", check=False
    )
    assert proc.returncode != 0 and "redirect URI" in proc.stderr


def test_users_add_reads_the_password_from_stdin_only(env):
    proc = run_cli(env, "users", "add", "eve", "--name", "Eve", check=False)
    assert proc.returncode == 2 and "--password-stdin" in proc.stderr
    proc = run_cli(
        env, "users", "add", "dev", "--name", "Dup", "--password-stdin", stdin="a-long-password\n", check=False
    )
    assert proc.returncode == 1 and "exists" in proc.stderr
    listed = j(env, "users", "list")
    assert "password_hash" not in json.dumps(listed)


def _stored(env, username):
    store = open_store(env["CAMPUSID_DATABASE_URL"], Path(env["CAMPUSID_DATA_DIR"]))
    try:
        return run(store, store.users.by_username(username))
    finally:
        store.close()


def test_users_add_stores_the_given_and_family_names_as_given(env):
    args = ["users", "add", "wang", "--name", "王小明", "--given-name", "小明", "--family-name", "王"]
    added = j(env, *args, "--email", "wang@example.edu", "--student-number", "S1", "--password-stdin", stdin=PW)
    assert added == {
        "username": "wang",
        "name": "王小明",
        "role": "student",
        "student_number": "S1",
        "given_name": "小明",
        "family_name": "王",
        "email": "wang@example.edu",
    }
    user = _stored(env, "wang")
    assert (user.name, user.given_name, user.family_name, user.email) == ("王小明", "小明", "王", "wang@example.edu")
    # --name alone: no given or family name guessed from it
    li = j(env, "users", "add", "li", "--name", "Li Lei", "--password-stdin", stdin=PW)
    assert (li["given_name"], li["family_name"], li["email"]) == (None, None, None)
    assert (_stored(env, "li").given_name, _stored(env, "li").family_name) == (None, None)


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["x" * 65, "--name", "X"], 2, "the username must be 1-64 printable characters without spaces"),
        (["eve", "--name", "Eve", "--email", "nobody"], 2, "has no @"),
        (["eve", "--name", "Eve", "--given-name", ""], 2, "the given name must be 1-100"),
        (["eve", "--name", ""], 2, "the name must be 1-200"),
        (["eve", "--name", "Eve", "--student-number", "S1"], 1, "a user with student number 'S1' exists already"),
    ],
)
def test_users_add_refuses_what_the_rules_refuse(env, args, code, message):
    j(env, "users", "add", "wang", "--name", "Wang", "--student-number", "S1", "--password-stdin", stdin=PW)
    proc = run_cli(env, "users", "add", *args, "--password-stdin", "--json", stdin=PW, check=False)
    assert proc.returncode == code and message in json.loads(proc.stderr)["error"]
    assert _stored(env, "eve") is None


def test_unknown_app_is_a_clear_error(env):
    proc = run_cli(env, "apps", "show", "nope", check=False)
    assert proc.returncode == 1 and "no application" in proc.stderr
