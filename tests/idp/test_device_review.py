"""Who may use the device authorization grant: an app asks for it, and its review grants it (or
not) through the CLI, the developer portal, the review console and the management API. The
grant types an app was granted are stored, so a device flow is refused until then."""

from __future__ import annotations

import json

import pytest

from tests.conftest import add_users, run_cli
from tests.idp.device_helpers import start
from tests.portal.helpers import NATIVE_URI, admin_csrf, api_token, new_app_form, portal_csrf, sign_in


@pytest.fixture
def env(idp_env) -> dict:
    add_users(idp_env, "a-long-password", ("dev", "developer"), ("admin", "admin"))
    return idp_env


def j(env, *args):
    return json.loads(run_cli(env, *args, "--json").stdout)


def _create(env, *extra: str) -> str:
    args = ["apps", "create", "--name", "Lab bot", "--type", "native", "--redirect-uri", "http://127.0.0.1/cb"]
    app = j(env, *args, "--owner", "dev", *extra)
    assert app["granted_grant_types"] == []
    j(env, "apps", "submit", app["client_id"])
    return app["client_id"]


def test_the_cli_grants_the_device_grant_only_when_named(env):
    asked = _create(env, "--grant-type", "device_code")
    assert j(env, "apps", "show", asked)["grant_types"] == ["device_code"]
    approved = j(env, "apps", "approve", asked, "--by", "admin")  # asked for, but not granted by name
    assert approved["granted_grant_types"] == []
    named = _create(env)  # never asked: the reviewer may still grant it
    approved = j(env, "apps", "approve", named, "--by", "admin", "--grant-type", "device_code")
    assert approved["granted_grant_types"] == ["device_code"]
    assert j(env, "apps", "activate", named)["granted_grant_types"] == ["device_code"]


def test_the_cli_refuses_an_unknown_grant_type_with_a_message(env):
    cid = _create(env)
    proc = run_cli(env, "apps", "approve", cid, "--by", "admin", "--grant-type", "implicit", check=False)
    assert proc.returncode != 0 and "unknown grant type" in proc.stderr and "Traceback" not in proc.stderr
    assert j(env, "apps", "show", cid)["state"] == "under_review"
    proc = run_cli(
        env,
        "apps",
        "create",
        "--name",
        "x",
        "--type",
        "native",
        "--redirect-uri",
        "http://127.0.0.1/cb",
        "--owner",
        "dev",
        "--grant-type",
        "password",
        "--json",
        check=False,
    )
    assert proc.returncode == 1 and "unknown grant type" in json.loads(proc.stderr)["error"]


def test_the_portal_asks_and_the_console_grants(console):
    dev = sign_in(console, "dev")
    form = new_app_form(portal_csrf(dev), name="Lab bot", **{"grant_type.device_code": "on"})
    r = dev.post("/developer/apps", data=form)
    assert r.status_code == 201 and 'id="grant-types"' in r.text
    cid = next(c.client_id for c in console.db.clients() if c.name == "Lab bot")
    assert console.db.client(cid).grant_types == ("device_code",)
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
    assert console.db.client(cid).granted_grant_types == ("device_code",)
    dev.post(f"/developer/apps/{cid}/activate", data={"csrf_token": portal_csrf(dev)})
    with console.client() as device:
        assert start(device, cid).status_code == 200


def test_a_console_approval_without_the_box_does_not_grant_it(console):
    dev = sign_in(console, "dev")
    dev.post("/developer/apps", data=new_app_form(portal_csrf(dev), name="Plain", uris=NATIVE_URI))
    cid = next(c.client_id for c in console.db.clients() if c.name == "Plain")
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
