"""The hot endpoints' direct way in (idp/app.py IdentityProvider): the same endpoints and the same
answers as through Starlette's router, errors included."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from campusid.idp import faces
from campusid.idp.app import create_app
from campusid.idp.pages import routes as shared_pages
from campusid.idp.settings import load_settings
from tests.idp.conftest import WEB_REDIRECT
from tests.idp.helpers import auth_params, login_through_pages


def _routed(routes: list, prefix: str = "") -> dict:
    """(method, path) -> endpoint as Starlette's route table has it."""
    out = {}
    for route in routes:
        if isinstance(route, Mount):
            out |= _routed(route.routes, prefix + route.path)
        elif isinstance(route, Route):
            out |= {(m, prefix + route.path): route.endpoint for m in route.methods or ()}
    return out


@pytest.mark.parametrize("issuer", ["http://127.0.0.1:8000", "https://login.example.edu/idp"])
def test_the_direct_table_is_the_route_tables_hot_entries(idp_env, issuer):
    app = create_app(load_settings({**idp_env, "CAMPUSID_ISSUER": issuer}))
    prefix = app.state.ctx.settings.issuer.path
    routed = _routed(app.routes)
    direct = {key: route.endpoint for key, route in app._direct.items()}
    hot = faces.hot_routes() | shared_pages.HOT
    assert hot == {
        ("GET", "/oauth/authorize"),
        ("POST", "/login"),
        ("POST", "/oauth/token"),
        ("GET", "/oauth/userinfo"),
        ("GET", "/cas/login"),
        ("GET", "/cas/serviceValidate"),
        ("GET", "/cas/p3/serviceValidate"),
    }
    assert direct == {(m, prefix + p): routed[(m, prefix + p)] for m, p in hot}
    app.state.ctx.store.close()


def test_a_flow_under_an_issuer_path_takes_the_direct_way(idp_env):
    """Sign-in, code and token under https://…/idp: every hot endpoint answers through the table."""
    from tests.idp.helpers import active_client, make_user

    issuer = "https://login.example.edu/idp"
    app = create_app(load_settings({**idp_env, "CAMPUSID_ISSUER": issuer}))
    store = app.state.ctx.store
    make_user(store, "alice", student_number="2024001", name="Alice Zhang")
    web_id, secret = active_client(
        store, client_type="web", redirect_uris=[WEB_REDIRECT], scopes=["openid", "profile"], client_id="web-app"
    )
    flow = auth_params(web_id, WEB_REDIRECT)
    with TestClient(app, base_url="https://login.example.edu", follow_redirects=False) as c:
        code = login_through_pages(c, issuer, flow, "alice")["code"]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": WEB_REDIRECT}
        r = c.post("/idp/oauth/token", data={**form, "code_verifier": flow.verifier}, auth=(web_id, secret))
        assert r.status_code == 200, r.text
        info = c.get("/idp/oauth/userinfo", headers={"Authorization": f"Bearer {r.json()['access_token']}"})
        assert info.status_code == 200 and info.json()["sub"]
        assert c.get("/oauth/token").status_code == 404  # outside the issuer's path: nothing
    store.close()


def test_an_unexpected_error_in_a_hot_endpoint_is_a_logged_500_and_not_raised_to_the_server(idp, monkeypatch, caplog):
    async def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(idp.store.grants, "consume_code", broken)
    form = {"grant_type": "authorization_code", "code": "c", "redirect_uri": WEB_REDIRECT, "code_verifier": "v" * 43}
    with TestClient(idp.app, base_url=idp.issuer) as c:  # raises whatever reaches the server
        r = c.post("/oauth/token", data=form, auth=(idp.web_id, idp.web_secret))
    assert r.status_code == 500 and r.json() == {"error": "server_error"}
    assert r.headers["cache-control"] == "no-store"
    assert [rec.getMessage() for rec in caplog.records if rec.exc_info] == ["unhandled error on POST /oauth/token"]


def test_methods_outside_the_table_still_take_starlettes_way(idp, browser):
    query = urlencode(auth_params(idp.web_id, WEB_REDIRECT).params)
    assert browser.head(f"/oauth/authorize?{query}").status_code == 200  # HEAD: Starlette's GET route
    r = browser.put("/oauth/token")
    assert r.status_code == 405 and r.json()["error"] == "invalid_request"
