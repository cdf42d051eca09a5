"""Who may use the device authorization grant: an app asks for it, and its review grants it (or
not) through the CLI, the developer portal, the review console and the management API. The
grant types an app was granted are stored, so a device flow is refused until then."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from campusid.idp.faces import app_service
from campusid.idp.store import open_store
from tests.conftest import run_cli
from tests.idp.device_helpers import start
from tests.idp.helpers import SyncStore, make_user
from tests.portal.helpers import NATIVE_URI, admin_csrf, api_token, new_app_form, portal_csrf, sign_in


@pytest.fixture
def cli(idp_env, tmp_path):
    """The environment for `campusid`, with its users and one app under review made in process
    (each command is a process start: only the steps under test go through the CLI)."""
    store = open_store(idp_env["CAMPUSID_DATABASE_URL"], Path(idp_env["CAMPUSID_DATA_DIR"]))
    make_user(store, "dev", role="developer")
    make_user(store, "admin", role="admin")
    apps = SyncStore(store, app_service(store))
    apps.create(
        name="Plain", app_type="native", redirect_uris=[NATIVE_URI], scopes=None, owner="dev", client_id="plain"
    )
    apps.submit("plain")
    yield idp_env, apps
    store.close()


def j(env, *args):
    return json.loads(run_cli(env, *args, "--json").stdout)


def test_the_cli_asks_for_the_device_grant_and_grants_it_only_by_name(cli):
    env, apps = cli
    create = ["apps", "create", "--name", "Lab bot", "--type", "native", "--redirect-uri", NATIVE_URI]
    asked = j(env, *create, "--grant-type", "device_code", "--owner", "dev")
    assert (asked["grant_types"], asked["granted_grant_types"]) == (["device_code"], [])
    apps.submit(asked["client_id"])
    approved = j(env, "apps", "approve", asked["client_id"], "--by", "admin")  # asked for, not granted by name
    assert approved["granted_grant_types"] == []
    # never asked: the reviewer may still grant it; an unknown grant type is refused with a message
    refused = run_cli(env, "apps", "approve", "plain", "--by", "admin", "--grant-type", "implicit", check=False)
    assert refused.returncode == 1 and "unknown grant type" in refused.stderr and "Traceback" not in refused.stderr
    assert apps.get("plain").state == "under_review"
    approved = j(env, "apps", "approve", "plain", "--by", "admin", "--grant-type", "device_code")
    assert approved["granted_grant_types"] == ["device_code"] and approved["grant_types"] == []
    refused = run_cli(env, *create, "--grant-type", "password", "--owner", "dev", "--json", check=False)
    assert refused.returncode == 1 and "unknown grant type" in json.loads(refused.stderr)["error"]


def test_the_portal_asks_and_the_console_grants(console):
    dev = sign_in(console, "dev")
    form = new_app_form(portal_csrf(dev), name="Lab bot", **{"grant_type.device_code": "on"})
    r = dev.post("/developer/apps", data=form)
    assert r.status_code == 201 and 'id="grant-types"' in r.text
    cid = next(c.client_id for c in console.db.apps.list() if c.name == "Lab bot")
    assert console.db.apps.get(cid).grant_types == ("device_code",)
    dev.post(f"/developer/apps/{cid}/submit", data={"csrf_token": portal_csrf(dev)})
    admin = sign_in(console, "admin2", next_path="/admin")
    page = admin.get(f"/admin/apps/{cid}").text
    assert 'id="requested-grant-types"' in page and 'id="grant-device-code"' in page
    assert 'name="grant_type.device_code" value="on" checked' in page  # pre-ticked: the app asked
    r = admin.post(
        f"/admin/apps/{cid}/approve",
        data={"csrf_token": admin_csrf(admin), "subject": "app", "grant_type.device_code": "on"},
    )
    assert r.status_code == 303
    assert console.db.apps.get(cid).granted_grant_types == ("device_code",)
    dev.post(f"/developer/apps/{cid}/activate", data={"csrf_token": portal_csrf(dev)})
    with console.client() as device:
        assert start(device, cid).status_code == 200


def test_a_console_approval_without_the_box_does_not_grant_it(console):
    dev = sign_in(console, "dev")
    dev.post("/developer/apps", data=new_app_form(portal_csrf(dev), name="Plain", uris=NATIVE_URI))
    cid = next(c.client_id for c in console.db.apps.list() if c.name == "Plain")
    dev.post(f"/developer/apps/{cid}/submit", data={"csrf_token": portal_csrf(dev)})
    admin = sign_in(console, "admin2", next_path="/admin")
    assert 'name="grant_type.device_code" value="on" >' in admin.get(f"/admin/apps/{cid}").text  # not ticked
    admin.post(f"/admin/apps/{cid}/approve", data={"csrf_token": admin_csrf(admin), "subject": "app"})
    dev.post(f"/developer/apps/{cid}/activate", data={"csrf_token": portal_csrf(dev)})
    with console.client() as device:
        assert start(device, cid).json()["error"] == "unauthorized_client"


def test_the_api_asks_grants_and_refuses_unknown_grant_types(console):
    dev, admin = sign_in(console, "dev"), sign_in(console, "admin2")
    dev.headers["X-CSRF-Token"], admin.headers["X-CSRF-Token"] = api_token(dev), api_token(admin)
    body = {"name": "Bot", "type": "native", "redirect_uris": ["http://127.0.0.1/cb"], "grant_types": ["device_code"]}
    r = dev.post("/api/v1/apps", json=body)
    assert r.status_code == 201 and r.json()["grant_types"] == ["device_code"]
    cid = r.json()["client_id"]
    assert dev.post("/api/v1/apps", json={**body, "grant_types": ["implicit"]}).status_code == 422
    dev.post(f"/api/v1/apps/{cid}/submit")
    assert admin.post(f"/api/v1/apps/{cid}/approve", json={"grant_types": ["nope"]}).status_code == 422
    r = admin.post(f"/api/v1/apps/{cid}/approve", json={"grant_types": ["device_code"]})
    assert r.status_code == 200 and r.json()["granted_grant_types"] == ["device_code"]
    doc = console.client().get("/api/v1/openapi.json").json()
    assert "grant_types" in doc["components"]["schemas"]["Approve"]["properties"]


def test_a_revision_keeps_the_granted_grant_types_unless_the_reviewer_names_them(console):
    apps = console.apps
    apps.create(
        name="Bot",
        app_type="native",
        redirect_uris=[NATIVE_URI],
        scopes=["openid"],
        owner="dev",
        client_id="rev-bot",
        grant_types=["device_code"],
    )
    apps.submit("rev-bot")
    apps.approve("rev-bot", "admin", None, ["device_code"])
    apps.activate("rev-bot")
    change = {
        "name": "Bot 2",
        "description": "",
        "redirect_uris": [NATIVE_URI],
        "scopes": ["openid"],
        "justifications": {},
        "grant_types": ["device_code"],
    }
    apps.propose_revision("rev-bot", actor="dev", **change)
    assert apps.approve_revision("rev-bot", "admin")["granted_grant_types"] == ["device_code"]
    apps.propose_revision("rev-bot", actor="dev", **{**change, "grant_types": []})
    shown = apps.approve_revision("rev-bot", "admin", None, [])
    assert shown["granted_grant_types"] == [] and shown["name"] == "Bot 2"
