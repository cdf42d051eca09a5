"""The review console: admins only, the queue oldest first, URI checks, approving with a choice
of sensitive scopes, feedback required to reject, nobody reviews their own app, suspend and
reinstate, the audit log, users and roles, CSRF and escaping."""

from __future__ import annotations

from campusid.idp.store.rows import ClientConfig, ClientEvent
from tests.portal.helpers import XSS, XSS_ESCAPED, admin_csrf, sign_in, snapshot
from tests.test_user_facing_text import DESIGN_CITATION

URI = ["http://127.0.0.1/callback"]


def _submitted(console, name: str, owner: str = "dev", scopes=None, uris=URI, app_type="native", **kw) -> str:
    apps = console.apps
    cid = apps.create(name=name, app_type=app_type, redirect_uris=uris, scopes=scopes, owner=owner, **kw)[0][
        "client_id"
    ]
    apps.submit(cid)
    return cid


def test_only_admins_reach_the_console(console):
    assert console.client().get("/admin").headers["location"] == "/login?next=/admin"
    r = sign_in(console, "dev", "/admin").get("/admin")
    assert r.status_code == 403 and "Only administrators" in r.text


def test_queue_is_oldest_first_and_includes_revisions(console):
    first = _submitted(console, "First")
    second = _submitted(console, "Second")
    # submitted long ago: the event's time is the app's updated_at
    assert console.db.apps.move(ClientEvent(None, first, "t", "submit", "under_review", "under_review", None, 1000))
    console.apps.propose_revision(
        "native-app",
        actor="dev",
        name="native app",
        description="",
        redirect_uris=URI,
        scopes=["openid"],
        justifications={},
    )
    page = sign_in(console, "admin", "/admin").get("/admin").text
    assert page.index(first) < page.index(second) < page.index("native-app")
    assert "Change to an active app" in page


def test_detail_checks_each_redirect_uri_and_shows_justifications(console):
    cid = _submitted(console, "Grades", scopes=["openid", "grades.read"], justifications={"grades.read": XSS})
    row = console.db.apps.get(cid)
    older_rules = ClientConfig(
        row.name, row.description, URI + ["http://localhost/cb"], row.scopes, row.justifications, None
    )
    assert console.db.apps.edit(
        older_rules, ClientEvent(None, cid, "t", "edit", "under_review", "under_review", None, 1)
    )  # a row registered under older rules: the console flags it
    page = sign_in(console, "admin", "/admin").get(f"/admin/apps/{cid}").text
    assert "http://127.0.0.1/callback</code> — ✓ meets the rules" in page
    assert "not localhost or another host (RFC 8252 8.3)" in page
    assert XSS_ESCAPED in page and "<script>alert(1)" not in page


def test_uri_checks_tell_the_reviewer_the_rules_in_their_language(console):
    cid = _submitted(console, "Rules")
    page = sign_in(console, "admin", "/admin").get(f"/admin/apps/{cid}").text
    assert "<h3>Redirect URI checks</h3>" in page
    assert "Native apps must use a loopback IP literal" in page and "RFC 8252 7.1, 7.3" in page
    zh = sign_in(console, "admin", "/admin", **{"Accept-Language": "zh-CN"}).get(f"/admin/apps/{cid}").text
    assert "<h3>重定向 URI 检查</h3>" in zh
    assert "原生应用必须使用回环 IP" in zh and "RFC 8252 7.1、7.3" in zh
    assert not DESIGN_CITATION.search(page + zh)


def test_approve_grants_only_the_chosen_sensitive_scopes(console):
    cid = _submitted(
        console,
        "Both",
        scopes=["openid", "profile", "student_number", "grades.read"],
        justifications={"student_number": "a", "grades.read": "b"},
    )
    admin = sign_in(console, "admin", "/admin")
    r = admin.post(
        f"/admin/apps/{cid}/approve",
        data={"csrf_token": admin_csrf(admin), "subject": "app", "grant.grades.read": "on"},
    )
    assert r.status_code == 303
    row = console.db.apps.get(cid)
    assert row.state == "approved" and row.granted_scopes == ("openid", "profile", "grades.read")


def test_reject_needs_feedback_and_feedback_renders_as_text(console):
    cid = _submitted(console, "Needs work")
    admin = sign_in(console, "admin", "/admin")
    before = snapshot(console, cid)
    r = admin.post(
        f"/admin/apps/{cid}/reject", data={"csrf_token": admin_csrf(admin), "subject": "app", "feedback": "   "}
    )
    assert r.status_code == 422 and "feedback is required" in r.text
    assert snapshot(console, cid) == before
    r = admin.post(
        f"/admin/apps/{cid}/reject", data={"csrf_token": admin_csrf(admin), "subject": "app", "feedback": XSS}
    )
    assert r.status_code == 303 and console.db.apps.get(cid).state == "rejected"
    for page in (
        admin.get(f"/admin/apps/{cid}").text,
        sign_in(console, "dev").get(f"/developer/apps/{cid}").text,
        admin.get("/admin/audit").text,
    ):
        assert XSS_ESCAPED in page and "<script>alert(1)" not in page


def test_nobody_reviews_their_own_app(console):
    cid = _submitted(console, "Mine", owner="admin")
    admin = sign_in(console, "admin", "/admin")
    assert "another administrator must review it" in admin.get(f"/admin/apps/{cid}").text
    before = snapshot(console, cid)
    r = admin.post(f"/admin/apps/{cid}/approve", data={"csrf_token": admin_csrf(admin), "subject": "app"})
    assert r.status_code == 403 and "nobody reviews their own application" in r.text
    assert snapshot(console, cid) == before


def test_suspend_and_reinstate_an_active_app_with_audit(console):
    admin = sign_in(console, "admin2", "/admin")
    r = admin.post("/admin/apps/native-app/suspend", data={"csrf_token": admin_csrf(admin), "reason": "abuse"})
    assert r.status_code == 303 and console.db.apps.get("native-app").state == "suspended"
    r = admin.post("/admin/apps/native-app/reinstate", data={"csrf_token": admin_csrf(admin)})
    assert r.status_code == 303 and console.db.apps.get("native-app").state == "active"
    audit = admin.get("/admin/audit").text
    assert "Suspended" in audit and "Reinstated" in audit and "abuse" in audit


def test_admin_form_without_a_valid_csrf_token_changes_nothing(console):
    cid = _submitted(console, "Waiting")
    admin = sign_in(console, "admin", "/admin")
    before = snapshot(console, cid)
    for data in ({"subject": "app"}, {"subject": "app", "csrf_token": "forged"}):
        r = admin.post(f"/admin/apps/{cid}/approve", data=data)
        assert r.status_code == 403 and "Nothing was changed" in r.text
    assert snapshot(console, cid) == before
    r = admin.post("/admin/users/alice/role", data={"role": "admin", "csrf_token": "forged"})
    assert r.status_code == 403 and console.db.users.by_username("alice").role == "student"


def test_users_and_roles(console):
    admin = sign_in(console, "admin", "/admin")
    assert "alice" in admin.get("/admin/users").text
    r = admin.post("/admin/users/alice/role", data={"role": "developer", "csrf_token": admin_csrf(admin)})
    assert r.status_code == 303 and console.db.users.by_username("alice").role == "developer"
    r = admin.post("/admin/users/admin/role", data={"role": "student", "csrf_token": admin_csrf(admin)})
    assert r.status_code == 403 and console.db.users.by_username("admin").role == "admin"


def test_console_in_chinese(console):
    page = sign_in(console, "admin", "/admin", **{"Accept-Language": "zh"}).get("/admin").text
    assert "审核队列" in page
