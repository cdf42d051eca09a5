"""Registering single logout (OpenID Connect RP-Initiated and Back-Channel Logout 1.0): the CLI's
--post-logout-redirect-uri (repeatable) and --backchannel-logout-uri, the URI rules, `apps show`,
a change on an active app as a revision, the management API, and discovery."""

import json

import pytest

from campusid.idp.apps import ValidationFailed
from tests.conftest import add_users, run_cli
from tests.idp.helpers import run


def j(env, *args):
    return json.loads(run_cli(env, *args, "--json").stdout)


@pytest.fixture
def env(idp_env):
    add_users(idp_env, "a-long-password", ("dev", "developer"), ("admin", "admin"))
    return idp_env


def test_cli_registers_shows_and_revises_logout_uris(env):
    app = j(
        env,
        "apps", "create", "--name", "Library", "--type", "web", "--owner", "dev",
        "--redirect-uri", "https://lib.example.edu/cb",
        "--post-logout-redirect-uri", "https://lib.example.edu/bye",
        "--post-logout-redirect-uri", "https://lib.example.edu/bye?from=idp",
        "--backchannel-logout-uri", "https://10.1.2.3/backchannel",
    )  # fmt: skip
    cid = app["client_id"]
    shown = j(env, "apps", "show", cid)
    assert shown["post_logout_redirect_uris"] == ["https://lib.example.edu/bye", "https://lib.example.edu/bye?from=idp"]
    assert shown["backchannel_logout_uri"] == "https://10.1.2.3/backchannel"  # private addresses are fine
    human = run_cli(env, "apps", "show", cid).stdout
    assert "https://lib.example.edu/bye" in human and "https://10.1.2.3/backchannel" in human

    for step in (["submit"], ["approve", "--by", "admin"], ["activate"]):
        run_cli(env, "apps", step[0], cid, *step[1:])
    # On an active app a change is a revision: the active configuration serves until approved.
    revised = j(env, "apps", "edit", cid, "--post-logout-redirect-uri", "https://lib.example.edu/signed-out")
    assert revised["state"] == "active" and revised["revision"]["state"] == "under_review"
    assert revised["revision"]["post_logout_redirect_uris"] == ["https://lib.example.edu/signed-out"]
    assert revised["revision"]["backchannel_logout_uri"] == "https://10.1.2.3/backchannel"  # kept
    assert revised["post_logout_redirect_uris"][0] == "https://lib.example.edu/bye"
    approved = j(env, "apps", "approve", cid, "--by", "admin")
    assert approved["post_logout_redirect_uris"] == ["https://lib.example.edu/signed-out"]
    assert approved["revision"] is None


@pytest.mark.parametrize(
    "option, uri, message",
    [
        ("--backchannel-logout-uri", "http://rp.example.edu/bc", "must use https"),
        ("--backchannel-logout-uri", "https://rp.example.edu/bc#frag", "fragment"),
        ("--backchannel-logout-uri", "not a uri", "without spaces"),
        ("--post-logout-redirect-uri", "http://rp.example.edu/bye", "https"),
        ("--post-logout-redirect-uri", "https://rp.example.edu/*", "wildcards"),
    ],
)
def test_cli_refuses_bad_logout_uris_with_a_message(env, option, uri, message):
    proc = run_cli(
        env, "apps", "create", "--name", "X", "--type", "web", "--owner", "dev",
        "--redirect-uri", "https://rp.example.edu/cb", option, uri, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert message in " ".join(proc.stderr.split()) and "Traceback" not in proc.stderr


def test_loopback_http_is_allowed_for_development(idp):
    data, _ = run(
        idp.store,
        idp.ctx.apps.create(
            name="Dev RP",
            app_type="web",
            redirect_uris=["http://127.0.0.1:9000/cb"],
            scopes=["openid"],
            owner="dev",
            post_logout_redirect_uris=["http://localhost:9000/bye"],
            backchannel_logout_uri="http://[::1]:9000/bc",
        ),
    )
    assert data["backchannel_logout_uri"] == "http://[::1]:9000/bc"
    with pytest.raises(ValidationFailed, match="at most 20"):
        run(
            idp.store,
            idp.ctx.apps.create(
                name="Many",
                app_type="web",
                redirect_uris=["https://rp.example.edu/cb"],
                scopes=["openid"],
                owner="dev",
                post_logout_redirect_uris=[f"https://rp.example.edu/bye{i}" for i in range(21)],
            ),
        )


def test_discovery_announces_single_logout(browser, idp):
    doc = browser.get("/.well-known/openid-configuration").json()
    assert doc["end_session_endpoint"] == idp.issuer + "/logout"
    assert doc["backchannel_logout_supported"] is True
    assert doc["backchannel_logout_session_supported"] is True


def test_management_api_and_portal_take_logout_uris(console):
    from tests.portal.helpers import api_token, sign_in

    dev = sign_in(console, "dev")
    dev.headers["X-CSRF-Token"] = api_token(dev)
    body = {
        "name": "Canteen",
        "type": "web",
        "redirect_uris": ["https://canteen.example.edu/cb"],
        "scopes": ["openid"],
        "post_logout_redirect_uris": ["https://canteen.example.edu/bye"],
        "backchannel_logout_uri": "https://canteen.example.edu/bc",
    }
    r = dev.post("/api/v1/apps", json=body)
    assert r.status_code == 201, r.text
    cid = r.json()["client_id"]
    assert r.json()["post_logout_redirect_uris"] == ["https://canteen.example.edu/bye"]
    assert r.json()["backchannel_logout_uri"] == "https://canteen.example.edu/bc"
    r = dev.patch(f"/api/v1/apps/{cid}", json={"backchannel_logout_uri": "http://canteen.example.edu/bc"})
    assert r.status_code == 422 and "https" in r.text
    r = dev.patch(f"/api/v1/apps/{cid}", json={"backchannel_logout_uri": ""})
    assert r.status_code == 200 and r.json()["backchannel_logout_uri"] is None
    page = dev.get(f"/developer/apps/{cid}")
    assert "https://canteen.example.edu/bye" in page.text
