"""CAS apps in the developer portal, the review console and the JSON API (docs/cas.md): a developer
registers services; the reviewer sees each service checked against the service rule, the CAS
attributes the scopes release and the proxy grant; the API takes and shows `services`."""

from __future__ import annotations

from tests.portal.helpers import admin_csrf, api_token, portal_csrf, sign_in


def test_a_developer_registers_a_cas_app_and_an_admin_reviews_it(console):
    dev = sign_in(console, "dev")
    form = {
        "csrf_token": portal_csrf(dev),
        "name": "Library",
        "description": "The catalogue",
        "type": "cas",
        "services": "https://library.example.edu/opac\nhttps://LIBRARY.example.edu:443/opac",
        "scope.profile": "on",
        "scope.email": "on",
        "grant_type.cas_proxy": "on",
    }
    r = dev.post("/developer/apps", data=form)
    assert r.status_code == 201, r.text[:500]
    assert 'id="services"' in r.text and "https://library.example.edu/opac" in r.text
    [app] = [a for a in console.apps.list_owned("dev") if a["name"] == "Library"]
    client_id = app["client_id"]
    shown = console.apps.show(client_id)
    assert shown["services"] == ["https://library.example.edu/opac"] and shown["grant_types"] == ["cas_proxy"]
    console.apps.submit(client_id)
    admin = sign_in(console, "admin", "/admin")
    page = admin.get(f"/admin/apps/{client_id}").text
    assert 'id="service-rules"' in page and "https://library.example.edu/opac" in page
    assert 'id="cas-release"' in page and "<code>displayName</code>" in page and "<code>mail</code>" in page
    assert 'id="grant-cas-proxy"' in page and 'id="grant-device-code"' not in page
    r = admin.post(
        f"/admin/apps/{client_id}/approve",
        data={"csrf_token": admin_csrf(admin), "subject": "app", "grant_type.cas_proxy": "on"},
    )
    assert r.status_code == 303
    assert console.apps.show(client_id)["granted_grant_types"] == ["cas_proxy"]


def test_a_bad_service_is_shown_back_with_the_reason(console):
    dev = sign_in(console, "dev")
    form = {"csrf_token": portal_csrf(dev), "name": "X", "type": "cas", "services": "http://x.example.edu/#f"}
    r = dev.post("/developer/apps", data=form)
    assert r.status_code == 422 and "fragment" in r.text


def test_the_api_takes_and_shows_services(console):
    dev = sign_in(console, "dev")
    headers = {"X-CSRF-Token": api_token(dev)}
    body = {"name": "Wiki", "type": "cas", "services": ["https://wiki.example.edu/"], "scopes": ["profile"]}
    r = dev.post("/api/v1/apps", json=body, headers=headers)
    assert r.status_code == 201, r.text
    app = r.json()
    assert app["services"] == ["https://wiki.example.edu/"] and app["type"] == "cas" and app["redirect_uris"] == []
    r = dev.patch(
        f"/api/v1/apps/{app['client_id']}", json={"services": ["https://wiki.example.edu/w/"]}, headers=headers
    )
    assert r.status_code == 200 and r.json()["services"] == ["https://wiki.example.edu/w/"]
    r = dev.post("/api/v1/apps", json={**body, "services": ["https://u@wiki.example.edu/"]}, headers=headers)
    assert r.status_code == 422 and "user information" in r.text


def test_the_cas_panels_in_chinese(console):
    zh = {"Accept-Language": "zh-CN,zh;q=0.9"}
    dev = sign_in(console, "dev", **zh)
    form = dev.get("/developer/apps/new").text
    assert "CAS 应用（使用 CAS 2.0/3.0 登录的校园应用）" in form and "CAS 服务地址（CAS 应用）" in form
    data = {"csrf_token": portal_csrf(dev), "name": "X", "type": "cas", "services": "https://x.example.edu/?q=1"}
    r = dev.post("/developer/apps", data=data)
    assert r.status_code == 422 and "服务地址 &#39;https://x.example.edu/?q=1&#39; 包含查询部分（?…）" in r.text
    data = {**data, "name": "Card", "services": "https://card.example.edu/", "grant_type.cas_proxy": "on"}
    page = dev.post("/developer/apps", data=data).text
    assert "CAS 应用" in page and 'id="services"' in page and "代理票据" in page
    [app] = [a for a in console.apps.list_owned("dev") if a["name"] == "Card"]
    console.apps.submit(app["client_id"])
    page = sign_in(console, "admin", "/admin", **zh).get(f"/admin/apps/{app['client_id']}").text
    assert "CAS 服务地址检查" in page and "CAS 验证释放的属性" in page and "授予代理票据（cas_proxy）" in page
    assert "为后端服务申请代理票据（CAS 应用）。须经审核人授予。" in page
