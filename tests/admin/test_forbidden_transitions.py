"""Forbidden transitions fail on all three faces — a clear message in the page, 403/409 from the
API, a non-zero exit from the CLI — and change nothing (state and audit log as before)."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.portal.helpers import admin_csrf, api_token, portal_csrf, sign_in, snapshot

URI = ["http://127.0.0.1/callback"]


def _app(console, state: str, owner: str = "dev") -> str:
    apps = console.apps
    cid = apps.create(name=f"{state} app", app_type="native", redirect_uris=URI, scopes=None, owner=owner)[0][
        "client_id"
    ]
    if state != "draft":
        apps.submit(cid)
    if state == "rejected":
        apps.reject(cid, "admin", "Needs a privacy notice")
    return cid


CASES = [
    # (name, state, who, page path+form, api call, cli args, status, message)
    (
        "approve a draft",
        "draft",
        "admin2",
        "/admin/apps/{cid}/approve",
        ("post", "/api/v1/apps/{cid}/approve", {}),
        ["apps", "approve", "{cid}", "--by", "admin2"],
        409,
        "cannot approve an application that is draft",
    ),
    (
        "activate a rejected app",
        "rejected",
        "dev",
        "/developer/apps/{cid}/activate",
        ("post", "/api/v1/apps/{cid}/activate", None),
        ["apps", "activate", "{cid}"],
        409,
        "cannot activate an application that is rejected",
    ),
    (
        "edit an app under review",
        "under_review",
        "dev",
        "/developer/apps/{cid}/edit",
        ("patch", "/api/v1/apps/{cid}", {"name": "New name"}),
        ["apps", "edit", "{cid}", "--name", "New name"],
        409,
        "cannot edit an application that is under_review",
    ),
]


@pytest.mark.parametrize("name,state,who,path,api,cli,status,message", CASES, ids=[c[0] for c in CASES])
def test_forbidden_transition_changes_nothing_on_any_face(
    console, idp_env, name, state, who, path, api, cli, status, message
):
    cid = _app(console, state)
    before = snapshot(console, cid)
    client = sign_in(console, who, "/admin" if who.startswith("admin") else "/developer")
    csrf = admin_csrf(client) if who.startswith("admin") else portal_csrf(client)
    form = {"csrf_token": csrf, "subject": "app", "name": "New name", "redirect_uris": URI[0]}

    page = client.post(path.format(cid=cid), data=form)
    assert page.status_code == status and message in page.text and 'role="alert"' in page.text

    method, url, body = api
    r = getattr(client, method)(
        url.format(cid=cid), headers={"X-CSRF-Token": api_token(client)}, **({"json": body} if body is not None else {})
    )
    assert r.status_code == status and message in r.json()["error_description"]

    proc = run_cli(
        {**idp_env, "CAMPUSID_ISSUER": console.issuer}, *[a.format(cid=cid) for a in cli], "--json", check=False
    )
    assert proc.returncode != 0 and message in proc.stderr
    assert snapshot(console, cid) == before


def test_a_developer_cannot_touch_another_developers_app(console, idp_env):
    cid = _app(console, "draft", owner="dev2")
    before = snapshot(console, cid)
    dev = sign_in(console, "dev")
    assert dev.get(f"/developer/apps/{cid}").status_code == 403
    for step in ("submit", "activate", "rotate-secret", "edit"):
        r = dev.post(
            f"/developer/apps/{cid}/{step}",
            data={"csrf_token": portal_csrf(dev), "name": "mine now", "redirect_uris": URI[0]},
        )
        assert r.status_code == 403 and "belongs to another developer" in r.text
    token = {"X-CSRF-Token": api_token(dev)}
    assert dev.get(f"/api/v1/apps/{cid}").status_code == 403
    assert dev.post(f"/api/v1/apps/{cid}/submit", headers=token).status_code == 403
    assert dev.patch(f"/api/v1/apps/{cid}", json={"name": "mine"}, headers=token).status_code == 403
    # The CLI's only notion of who acts is --by: a developer is refused as a reviewer.
    console.apps.submit(cid)
    before = snapshot(console, cid)
    proc = run_cli({**idp_env, "CAMPUSID_ISSUER": console.issuer}, "apps", "approve", cid, "--by", "dev", check=False)
    assert proc.returncode != 0 and "not an admin" in proc.stderr
    assert dev.post(f"/admin/apps/{cid}/approve", data={"csrf_token": "x"}).status_code == 403
    assert snapshot(console, cid) == before
