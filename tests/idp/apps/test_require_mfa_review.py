"""`--require-mfa` through every door of the review: the CLI, the console's approval form, the
management API; the developer portal and `apps show` say so, and a revision keeps it."""

from __future__ import annotations

import json
from pathlib import Path

from campusid.idp.faces import app_service
from campusid.idp.store import open_store
from tests.conftest import run_cli
from tests.idp.helpers import SyncStore, make_user
from tests.portal.helpers import NATIVE_URI, admin_csrf, api_token, new_app_form, portal_csrf, sign_in


def test_the_cli_approves_with_require_mfa(idp_env):
    store = open_store(idp_env["CAMPUSID_DATABASE_URL"], Path(idp_env["CAMPUSID_DATA_DIR"]))
    try:
        make_user(store, "dev", role="developer")
        make_user(store, "admin", role="admin")
        apps = SyncStore(store, app_service(store))
        for cid in ("strict", "plain"):
            apps.create(
                name=cid, app_type="native", redirect_uris=[NATIVE_URI], scopes=None, owner="dev", client_id=cid
            )
            apps.submit(cid)
    finally:
        store.close()
    out = run_cli(idp_env, "apps", "approve", "strict", "--by", "admin", "--require-mfa", "--json").stdout
    assert json.loads(out)["require_mfa"] is True
    out = run_cli(idp_env, "apps", "approve", "plain", "--by", "admin", "--json").stdout
    assert json.loads(out)["require_mfa"] is False
    human = run_cli(idp_env, "apps", "show", "strict").stdout
    assert "second factor" in human


def test_the_console_box_and_the_portal(console):
    dev = sign_in(console, "dev")
    dev.post("/developer/apps", data=new_app_form(portal_csrf(dev), name="Grades admin", uris=NATIVE_URI))
    cid = next(c.client_id for c in console.db.apps.list() if c.name == "Grades admin")
    dev.post(f"/developer/apps/{cid}/submit", data={"csrf_token": portal_csrf(dev)})
    admin = sign_in(console, "admin2", next_path="/admin")
    assert 'id="require-mfa"' in admin.get(f"/admin/apps/{cid}").text
    r = admin.post(
        f"/admin/apps/{cid}/approve", data={"csrf_token": admin_csrf(admin), "subject": "app", "require_mfa": "on"}
    )
    assert r.status_code == 303 and console.db.apps.get(cid).require_mfa is True
    assert 'id="requires-mfa"' in admin.get(f"/admin/apps/{cid}").text
    assert 'id="requires-mfa"' in dev.get(f"/developer/apps/{cid}").text


def test_the_api_approves_with_require_mfa_and_refuses_a_non_boolean(console):
    dev, admin = sign_in(console, "dev"), sign_in(console, "admin2")
    dev.headers["X-CSRF-Token"], admin.headers["X-CSRF-Token"] = api_token(dev), api_token(admin)
    r = dev.post("/api/v1/apps", json={"name": "Bot", "type": "native", "redirect_uris": ["http://127.0.0.1/cb"]})
    cid = r.json()["client_id"]
    dev.post(f"/api/v1/apps/{cid}/submit")
    assert admin.post(f"/api/v1/apps/{cid}/approve", json={"require_mfa": "maybe"}).status_code == 422
    r = admin.post(f"/api/v1/apps/{cid}/approve", json={"require_mfa": True})
    assert r.status_code == 200 and r.json()["require_mfa"] is True
    assert console.db.apps.get(cid).require_mfa is True
