"""The audit events of the contract (docs/operations.md) are written, each by what it names:
every review transition on every face is an `app_state_changed` event of its app, every consent
given on the consent page a `consent_granted` event; and no declared event type is left that
nothing records."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

from campusid.idp import events
from tests.conftest import run_cli
from tests.idp.conftest import NATIVE_REDIRECT, WEB_REDIRECT
from tests.idp.device_helpers import decide, device_app, start
from tests.idp.helpers import auth_params, login_through_pages
from tests.portal.helpers import admin_csrf, api_token, new_app_form, portal_csrf, sign_in

SRC = Path(__file__).resolve().parents[2] / "src" / "campusid"


def _changes(idp, client_id: str) -> list[tuple[str | None, str]]:
    """(username, detail) of the app's app_state_changed events, oldest first."""
    found = idp.db.events.list(type=events.APP_STATE_CHANGED, client_id=client_id, limit=100)
    return [(e.username, e.detail) for e in reversed(found)]


def test_every_declared_event_type_is_recorded_by_some_code():
    """A type in the contract that no `record(...)` call names is a defect, not a feature."""
    names = {name for name in dir(events) if name.isupper() and getattr(events, name) in events.TYPES}
    assert len(names) == len(events.TYPES)
    code = "\n".join(p.read_text() for p in SRC.rglob("*.py") if p.name != "events.py" or p.parent.name != "idp")
    unwritten = [n for n in sorted(names) if not re.search(rf"\b(ev|events)\.{n}\b", code)]
    assert unwritten == []


def test_the_api_s_review_transitions_are_each_an_event(console):
    dev, admin = sign_in(console, "dev"), sign_in(console, "admin2")
    for client in (dev, admin):
        client.headers["X-CSRF-Token"] = api_token(client)
    cid = dev.post("/api/v1/apps", json={"name": "Timetable", "type": "native", "redirect_uris": [NATIVE_REDIRECT]})
    cid = cid.json()["client_id"]
    dev.post(f"/api/v1/apps/{cid}/submit")
    admin.post(f"/api/v1/apps/{cid}/reject", json={"feedback": "Add a privacy notice"})
    dev.post(f"/api/v1/apps/{cid}/submit")
    admin.post(f"/api/v1/apps/{cid}/approve", json={})
    dev.post(f"/api/v1/apps/{cid}/activate")
    revision = {"name": "Timetable 2", "redirect_uris": [NATIVE_REDIRECT], "scopes": ["openid"], "justifications": {}}
    assert dev.post(f"/api/v1/apps/{cid}/revision", json=revision).status_code == 200
    admin.post(f"/api/v1/apps/{cid}/approve", json={"subject": "revision"})
    assert _changes(console, cid) == [
        ("dev", "create: - -> draft"),
        ("dev", "submit: draft -> under_review"),
        ("admin2", "reject: under_review -> rejected; feedback: Add a privacy notice"),
        ("dev", "submit: rejected -> under_review"),
        ("admin2", "approve: under_review -> approved"),
        ("dev", "activate: approved -> active"),
        ("dev", "revision_submit: active -> active (revision under_review)"),
        ("admin2", "revision_approve: active -> active (revision approved)"),
    ]


def test_the_portal_s_and_the_console_s_transitions_are_each_an_event(console):
    dev = sign_in(console, "dev")
    r = dev.post("/developer/apps", data=new_app_form(portal_csrf(dev)))
    cid = re.search(r"client_id=([A-Za-z0-9._-]+)|<code[^>]*>(app-[0-9a-f]+)</code>", r.text)
    cid = next(g for g in cid.groups() if g)
    dev.post(f"/developer/apps/{cid}/submit", data={"csrf_token": portal_csrf(dev)})
    admin = sign_in(console, "admin", "/admin")
    admin.post(f"/admin/apps/{cid}/approve", data={"csrf_token": admin_csrf(admin), "subject": "app"})
    console.apps.activate(cid)
    admin.post(f"/admin/apps/{cid}/suspend", data={"csrf_token": admin_csrf(admin), "reason": "abuse"})
    admin.post(f"/admin/apps/{cid}/reinstate", data={"csrf_token": admin_csrf(admin)})
    changes = _changes(console, cid)
    assert [d.split(":")[0] for _, d in changes] == ["create", "submit", "approve", "activate", "suspend", "reinstate"]
    assert [u for u, _ in changes] == ["dev", "dev", "admin", None, "admin", "admin"]
    assert changes[4][1] == "suspend: active -> suspended; feedback: abuse"


def test_the_cli_s_transitions_are_each_an_event(idp_env):
    env = idp_env
    for name, role in (("dev", "developer"), ("admin", "admin")):
        run_cli(
            env, "users", "add", name, "--name", name, "--role", role, "--password-stdin", stdin="a-long-password\n"
        )
    app = json.loads(
        run_cli(
            env,
            "apps",
            "create",
            "--name",
            "Lab",
            "--type",
            "native",
            "--redirect-uri",
            NATIVE_REDIRECT,
            "--owner",
            "dev",
            "--json",
        ).stdout
    )
    cid = app["client_id"]
    for step in (["submit"], ["approve", "--by", "admin"], ["activate"], ["suspend", "--by", "admin"]):
        run_cli(env, "apps", step[0], cid, *step[1:])
    listed = json.loads(run_cli(env, "events", "list", "--client", cid, "--type", "app_state_changed", "--json").stdout)
    details = [e["detail"] for e in reversed(listed["events"])]
    assert details == [
        "create: - -> draft",
        "submit: draft -> under_review",
        "approve: under_review -> approved",
        "activate: approved -> active",
        "suspend: active -> suspended",
    ]
    assert listed["events"][0]["username"] == "admin"


def test_a_consent_given_on_the_consent_page_is_an_event_and_a_denial_is_not(idp, browser):
    login_through_pages(
        browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT, scope="openid email"), "alice", consent="deny"
    )
    assert idp.db.events.list(type=events.CONSENT_GRANTED) == []
    login_through_pages(browser, idp.issuer, auth_params(idp.web_id, WEB_REDIRECT, scope="openid email"), "alice")
    [given] = idp.db.events.list(type=events.CONSENT_GRANTED)
    assert (given.username, given.client_id, given.detail) == ("alice", idp.web_id, "scopes: openid email")
    # remembered: the next sign-in asks nothing, and records nothing more
    browser.get(f"/oauth/authorize?{urlencode(auth_params(idp.web_id, WEB_REDIRECT, scope='openid email').params)}")
    assert len(idp.db.events.list(type=events.CONSENT_GRANTED)) == 1


def test_allowing_a_device_on_the_consent_page_is_a_consent_event(idp, browser):
    device_app(idp, "bot")
    user_code = start(browser, "bot").json()["user_code"]
    assert 'data-outcome="allowed"' in decide(browser, idp.issuer, user_code).text
    [given] = idp.db.events.list(type=events.CONSENT_GRANTED)
    assert given.client_id == "bot" and given.username == "alice" and given.detail == "scopes: openid profile"
