"""The developer portal: sign-in through the IdP's own login, roles, the secret shown once,
justifications, revisions of active apps, languages, CSRF and escaping."""

from __future__ import annotations

import re

from campusid.idp.crypto import token_hash
from tests.portal.helpers import XSS, XSS_ESCAPED, new_app_form, portal_csrf, sign_in, snapshot


def _created_id(page: str) -> str:
    return re.search(r'id="client-id">([^<]+)<', page).group(1)


def test_signed_out_visitor_is_sent_to_the_idp_login_with_next(console):
    r = console.client().get("/developer/apps/new")
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=/developer/apps/new"


def test_a_long_address_is_not_carried_whole_into_the_login_redirect(console):
    """The long fuzz run behind nginx found it: a 303 whose Location held an 8 KB query did not fit
    nginx's buffer for an upstream's headers (4 KB), and nginx answered 502. The query is dropped
    past MAX_RETURN (web/http.py), and the path too when it alone is that long."""
    client = console.client()
    r = client.get("/admin/audit?scope=" + "A" * 6000)
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=/admin/audit"
    r = client.get("/developer/apps/" + "B" * 6000)
    assert r.status_code == 303
    assert r.headers["location"] == "/login?next=/"
    r = client.get("/admin/audit?scope=" + "A" * 500)
    assert r.headers["location"] == "/login?next=/admin/audit%3Fscope%3D" + "A" * 500


def test_a_student_gets_a_403_page_not_the_portal(console):
    r = sign_in(console, "alice").get("/developer")
    assert r.status_code == 403
    assert "Only developers and administrators" in r.text
    assert r.headers["x-frame-options"] == "DENY" and "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_my_apps_lists_only_my_own_with_state_badges(console):
    console.apps.create(
        name="Other", app_type="native", redirect_uris=["http://127.0.0.1/x"], scopes=None, owner="dev2"
    )
    page = sign_in(console, "dev").get("/developer").text
    assert "native-app" in page and "web-app" in page and "Other" not in page
    assert '<span class="badge active">Active</span>' in page


def test_web_app_secret_is_shown_once_and_never_in_a_url(console):
    client = sign_in(console, "dev")
    r = client.post(
        "/developer/apps", data=new_app_form(portal_csrf(client), app_type="web", uris="https://rp.example.edu/cb")
    )
    assert r.status_code == 201 and "location" not in r.headers
    secret = re.search(r'id="client-secret">([^<]+)<', r.text).group(1)
    client_id = _created_id(r.text)
    assert console.db.apps.get(client_id).secret_hash == token_hash(secret)
    again = client.get(f"/developer/apps/{client_id}")
    assert secret not in again.text and "client-secret" not in again.text

    rotated = client.post(f"/developer/apps/{client_id}/rotate-secret", data={"csrf_token": portal_csrf(client)})
    new_secret = re.search(r'id="client-secret">([^<]+)<', rotated.text).group(1)
    assert new_secret != secret and console.db.apps.get(client_id).secret_hash == token_hash(new_secret)
    assert new_secret not in client.get(f"/developer/apps/{client_id}").text


def test_native_app_gets_no_secret(console):
    client = sign_in(console, "dev")
    r = client.post("/developer/apps", data=new_app_form(portal_csrf(client)))
    assert r.status_code == 201 and "client-secret" not in r.text
    assert console.db.apps.get(_created_id(r.text)).secret_hash is None


def test_sensitive_scope_needs_a_justification(console):
    client = sign_in(console, "dev")
    before = len(console.db.apps.list())
    r = client.post("/developer/apps", data=new_app_form(portal_csrf(client), **{"scope.grades.read": "on"}))
    assert r.status_code == 422 and "explain why the app needs the sensitive scope grades.read" in r.text
    assert len(console.db.apps.list()) == before
    r = client.post(
        "/developer/apps",
        data=new_app_form(
            portal_csrf(client), **{"scope.grades.read": "on", "why.grades.read": "Shows the transcript"}
        ),
    )
    assert r.status_code == 201
    assert console.db.apps.get(_created_id(r.text)).justifications == {"grades.read": "Shows the transcript"}


def test_refused_redirect_uri_is_explained_with_the_uri_escaped(console):
    client = sign_in(console, "dev")
    r = client.post("/developer/apps", data=new_app_form(portal_csrf(client), uris=f"http://127.0.0.1/{XSS}"))
    assert r.status_code == 422
    assert "without spaces or control characters" in r.text
    assert "<script>alert(1)</script>" not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text


def test_app_name_with_markup_renders_as_text(console):
    client = sign_in(console, "dev")
    r = client.post("/developer/apps", data=new_app_form(portal_csrf(client), name=XSS))
    assert r.status_code == 201
    for page in (r.text, client.get("/developer").text):
        assert XSS_ESCAPED in page and "<script>alert(1)" not in page and "<img src=x" not in page


def test_post_without_or_with_a_wrong_csrf_token_changes_nothing(console):
    client = sign_in(console, "dev")
    cid, _ = console.apps.create(
        name="Draft", app_type="native", redirect_uris=["http://127.0.0.1/x"], scopes=None, owner="dev"
    )
    cid = cid["client_id"]
    before = snapshot(console, cid)
    for data in ({"note": "no token"}, {"csrf_token": "forged"}, {"csrf_token": portal_csrf(sign_in(console, "dev2"))}):
        r = client.post(f"/developer/apps/{cid}/submit", data=data)
        assert r.status_code == 403 and "The form expired or was not sent from this site" in r.text
    assert snapshot(console, cid) == before
    count = len(console.db.apps.list())
    assert client.post("/developer/apps", data={**new_app_form("wrong")}).status_code == 403
    assert len(console.db.apps.list()) == count


def test_chinese_text_from_accept_language(console):
    client = sign_in(console, "dev", **{"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"})
    page = client.get("/developer").text
    assert '<html lang="zh-CN">' in page and "我的应用" in page and "已启用" in page
    english = client.get("/developer", headers={"Accept-Language": "fr, en;q=0.8"}).text
    assert "My applications" in english


def test_revision_of_an_active_app_keeps_serving_until_approved(console):
    dev = sign_in(console, "dev")
    old = console.db.apps.get("web-app")
    r = dev.post(
        "/developer/apps/web-app/edit",
        data={
            "csrf_token": portal_csrf(dev),
            "name": "web app",
            "redirect_uris": "https://rp.example.edu/new",
            "scope.profile": "on",
            "scope.student_number": "on",
            "why.student_number": "Match enrolments",
        },
    )
    assert r.status_code == 303 and r.headers["location"].endswith("done=revision")
    row = console.db.apps.get("web-app")
    assert row.state == "active" and row.redirect_uris == old.redirect_uris
    assert row.revision_state == "under_review"
    page = dev.get("/developer/apps/web-app").text
    assert "Change under review" in page and "https://rp.example.edu/new" in page

    console.apps.approve_revision("web-app", "admin2", ["student_number"])
    row = console.db.apps.get("web-app")
    assert row.redirect_uris == ("https://rp.example.edu/new",) and "student_number" in row.granted_scopes
    assert row.revision_state is None and row.state == "active"
