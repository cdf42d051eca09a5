"""The JSON management API: session-cookie authentication with a CSRF header, the same
operations and permissions as the pages, JSON errors, and its OpenAPI document."""

from __future__ import annotations

from tests.portal.helpers import api_token, sign_in, snapshot

NATIVE = {"name": "CLI tool", "type": "native", "redirect_uris": ["http://127.0.0.1/cb"], "scopes": ["openid"]}


def _client(console, username):
    client = sign_in(console, username)
    client.headers["X-CSRF-Token"] = api_token(client)
    return client


def test_openapi_document_describes_the_api(console):
    doc = console.client().get("/api/v1/openapi.json").json()
    assert doc["info"]["title"] == "campusid management API"
    for path in ("/apps", "/apps/{client_id}/approve", "/reviews", "/audit", "/users/{username}/role", "/me"):
        assert path in doc["paths"]
    assert "X-CSRF-Token" in str(doc["components"]["securitySchemes"])


def test_no_session_is_401_json(console):
    r = console.client().get("/api/v1/apps")
    assert r.status_code == 401 and r.json()["error"] == "login_required"
    assert r.headers["cache-control"] == "no-store"


def test_state_change_without_csrf_header_is_refused(console):
    client = sign_in(console, "dev")
    count = len(console.db.apps.list())
    r = client.post("/api/v1/apps", json=NATIVE)
    assert r.status_code == 403 and r.json()["error"] == "csrf_failed"
    r = client.post("/api/v1/apps", json=NATIVE, headers={"X-CSRF-Token": "forged"})
    assert r.status_code == 403 and len(console.db.apps.list()) == count


def test_full_review_workflow_through_the_api(console):
    dev, admin = _client(console, "dev"), _client(console, "admin2")
    r = dev.post("/api/v1/apps", json={**NATIVE, "type": "web", "redirect_uris": ["https://a.example.edu/cb"]})
    assert r.status_code == 201 and r.json()["client_secret"]
    cid = r.json()["client_id"]
    assert dev.get(f"/api/v1/apps/{cid}").json()["client_secret"] is None
    assert dev.post(f"/api/v1/apps/{cid}/submit").json()["state"] == "under_review"
    assert [i["app"]["client_id"] for i in admin.get("/api/v1/reviews").json()] == [cid]
    r = admin.post(f"/api/v1/apps/{cid}/reject", json={"feedback": "Add a privacy notice"})
    assert r.json()["state"] == "rejected" and r.json()["history"][-1]["feedback"] == "Add a privacy notice"
    assert dev.patch(f"/api/v1/apps/{cid}", json={"description": "Now with a notice"}).status_code == 200
    dev.post(f"/api/v1/apps/{cid}/submit")
    assert admin.post(f"/api/v1/apps/{cid}/approve", json={}).json()["state"] == "approved"
    assert dev.post(f"/api/v1/apps/{cid}/activate").json()["state"] == "active"
    rotated = dev.post(f"/api/v1/apps/{cid}/rotate-secret").json()
    assert rotated["client_secret"]
    r = dev.post(
        f"/api/v1/apps/{cid}/revision",
        json={
            "name": "CLI tool",
            "redirect_uris": ["https://a.example.edu/2"],
            "scopes": ["openid", "grades.read"],
            "justifications": {"grades.read": "transcript"},
        },
    )
    assert r.json()["revision"]["state"] == "under_review" and r.json()["redirect_uris"] == ["https://a.example.edu/cb"]
    r = admin.post(f"/api/v1/apps/{cid}/approve", json={"subject": "revision", "grant_scopes": []})
    assert r.json()["redirect_uris"] == ["https://a.example.edu/2"] and "grades.read" not in r.json()["granted_scopes"]
    events = [e["action"] for e in admin.get("/api/v1/audit").json() if e["client_id"] == cid]
    assert events[0] == "revision_approve" and events[-1] == "create"


def test_permissions_match_the_pages(console):
    dev, student, admin = _client(console, "dev2"), _client(console, "alice"), _client(console, "admin")
    assert student.get("/api/v1/apps").status_code == 403
    assert student.post("/api/v1/apps", json=NATIVE).status_code == 403
    assert dev.get("/api/v1/apps", params={"all": "true"}).status_code == 403
    assert dev.get("/api/v1/reviews").status_code == 403
    assert dev.get("/api/v1/users").status_code == 403
    assert dev.get("/api/v1/apps/native-app").status_code == 403  # owned by dev
    assert admin.get("/api/v1/apps/native-app").status_code == 200
    assert admin.get("/api/v1/apps/nope").status_code == 404
    assert dev.get("/api/v1/apps").json() == []
    assert admin.put("/api/v1/users/alice/role", json={"role": "developer"}).json()["role"] == "developer"


def test_errors_are_json_with_the_right_status(console):
    dev, admin = _client(console, "dev"), _client(console, "admin2")
    before = snapshot(console, "native-app")
    r = dev.patch("/api/v1/apps/native-app", json={"name": "x"})
    assert r.status_code == 409 and r.json()["error"] == "invalid_transition"
    r = admin.post("/api/v1/apps/native-app/approve", json={})
    assert r.status_code == 409
    r = dev.post("/api/v1/apps", json={**NATIVE, "redirect_uris": ["https://no.example.edu/cb"]})
    assert r.status_code == 422 and r.json()["error"] == "validation_failed"
    r = dev.post("/api/v1/apps", json={**NATIVE, "scopes": ["openid", "student_number"]})
    assert r.status_code == 422 and "student_number" in r.json()["error_description"]
    r = dev.post("/api/v1/apps", json={"name": "x"})
    assert r.status_code == 422 and r.json()["error"] == "validation_failed"
    assert snapshot(console, "native-app") == before
