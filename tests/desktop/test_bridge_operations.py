"""The bridge's operations over real HTTP, against the fake IdP and records API."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime

import httpx

from .fake_idp import FULL_SCOPE, FakeIdP
from .harness import BRIDGE_TOKEN, Bridge, HttpBrowser, wait_until


def _data(response: httpx.Response) -> dict:
    assert response.json()["success"] is True, response.text
    return response.json()["data"]


def _error(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


def test_health_needs_no_token_and_says_nothing_personal(bridge: Bridge) -> None:
    response = bridge.get("/health", token=None)
    assert response.status_code == 200
    assert _data(response) == {"status": "ok", "api_version": "1", "logged_in": False}


def test_login_then_sync_returns_the_students_grades(bridge: Bridge, browser: HttpBrowser, idp: FakeIdP) -> None:
    login = bridge.post("/login")
    assert login.status_code == 200, login.text
    data = _data(login)
    assert data["user"] == {"name": "Ada Student"}
    assert data["reused"] is False
    assert datetime.fromisoformat(data["expires_at"]).timestamp() > time.time()
    assert len(browser.opened) == 1 and browser.callback_statuses == [200]
    assert _data(bridge.get("/health", token=None))["logged_in"] is True
    sync = bridge.post("/sync_grades")
    assert sync.status_code == 200, sync.text
    assert [g["course_code"] for g in _data(sync)["grades"]] == ["CS101", "MA102", "PH110"]
    assert _data(sync)["grades"][0] == idp.grades[0]  # each grade exactly as the records API gives it
    assert idp.hits["records"] == 1


def test_second_login_reuses_the_session_without_a_browser(bridge: Bridge, browser: HttpBrowser) -> None:
    bridge.post("/login")
    again = bridge.post("/login")
    assert again.status_code == 200
    assert _data(again)["reused"] is True
    assert len(browser.opened) == 1


def test_login_with_expired_access_token_reuses_the_refresh_token(
    bridge: Bridge, browser: HttpBrowser, idp: FakeIdP
) -> None:
    idp.access_ttl = 1  # inside the refresh margin: every access token counts as expiring
    bridge.post("/login")
    again = bridge.post("/login")
    assert _data(again)["reused"] is True
    assert idp.hits["refresh"] == 1
    assert len(browser.opened) == 1


def test_login_with_a_dead_refresh_token_opens_the_browser(bridge: Bridge, browser: HttpBrowser, idp: FakeIdP) -> None:
    idp.access_ttl = 1
    bridge.post("/login")
    idp.refresh_tokens.clear()  # the IdP revoked the family
    again = bridge.post("/login")
    assert _data(again)["reused"] is False
    assert len(browser.opened) == 2


def test_force_login_opens_the_browser_even_with_a_session(bridge: Bridge, browser: HttpBrowser) -> None:
    bridge.post("/login")
    assert _data(bridge.post("/login", json={"force": True}))["reused"] is False
    assert len(browser.opened) == 2


def test_login_wait_false_answers_202_and_status_follows(bridge: Bridge, browser: HttpBrowser) -> None:
    response = bridge.post("/login", json={"wait": False})
    assert response.status_code == 202
    assert _data(response)["pending"] is True
    wait_until(lambda: _data(bridge.get("/status"))["state"] == "signed_in", what="sign-in")
    assert _data(bridge.get("/status"))["user"] == {"name": "Ada Student"}


def test_idp_token_endpoint_429_is_rate_limited_with_its_retry_after(bridge: Bridge, idp: FakeIdP) -> None:
    idp.token_retry_after = 17
    response = bridge.post("/login")
    assert response.status_code == 429
    assert _error(response) == "rate_limited"
    assert response.headers["Retry-After"] == "17"


def test_refresh_hitting_the_idp_limit_is_rate_limited_not_a_new_login(
    bridge: Bridge, browser: HttpBrowser, idp: FakeIdP
) -> None:
    idp.access_ttl = 1
    bridge.post("/login")
    idp.token_retry_after = 30
    response = bridge.post("/sync_grades")
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "30"
    assert len(browser.opened) == 1


def test_authorize_temporarily_unavailable_is_rate_limited(bridge: Bridge, idp: FakeIdP) -> None:
    idp.authorize_error = "temporarily_unavailable"
    response = bridge.post("/login")
    assert response.status_code == 429
    assert _error(response) == "rate_limited"
    assert int(response.headers["Retry-After"]) > 0


def test_authorize_access_denied_is_login_failed(bridge: Bridge, idp: FakeIdP) -> None:
    idp.authorize_error = "access_denied"
    response = bridge.post("/login")
    assert response.status_code == 502
    assert _error(response) == "login_failed"
    assert _data(bridge.get("/status"))["state"] == "signed_out"


def test_idp_unreachable_is_503(bridge: Bridge, idp: FakeIdP) -> None:
    idp.stop()
    response = bridge.post("/login")
    assert response.status_code == 503
    assert _error(response) == "upstream_unavailable"


def test_sync_without_session_is_409_and_never_starts_a_login(
    bridge: Bridge, browser: HttpBrowser, idp: FakeIdP
) -> None:
    response = bridge.post("/sync_grades")
    assert response.status_code == 409
    assert _error(response) == "not_logged_in"
    assert browser.opened == [] and idp.hits["authorize"] == 0


def test_grades_without_session_is_409(bridge: Bridge) -> None:
    response = bridge.get("/grades")
    assert response.status_code == 409
    assert _error(response) == "not_logged_in"


def test_grades_before_any_sync_is_empty(bridge: Bridge) -> None:
    bridge.post("/login")
    assert _data(bridge.get("/grades")) == {"grades": [], "synced_at": None}


def test_grades_are_served_offline_from_the_cache(bridge: Bridge, idp: FakeIdP) -> None:
    bridge.post("/login")
    synced = _data(bridge.post("/sync_grades"))
    idp.stop()  # the IdP and the records API are gone
    cached = bridge.get("/grades")
    assert cached.status_code == 200
    assert _data(cached) == synced
    assert bridge.post("/sync_grades").status_code == 503


def test_grades_needs_the_grades_read_scope(bridge: Bridge, idp: FakeIdP) -> None:
    idp.granted_scope = "openid profile offline_access"
    bridge.post("/login")
    response = bridge.get("/grades")
    assert response.status_code == 403
    assert _error(response) == "insufficient_scope"


def test_sync_refreshes_an_expiring_token_first(bridge: Bridge, idp: FakeIdP) -> None:
    idp.access_ttl = 1  # the login's token is inside the refresh margin
    bridge.post("/login")
    # The refreshed token lives long: with 1 s it could expire before the records call when a
    # second boundary fell between them, and the 401 retry would refresh a second time.
    idp.access_ttl = 300
    assert bridge.post("/sync_grades").status_code == 200
    assert idp.hits["refresh"] == 1


def test_sync_retries_once_after_the_records_api_rejects_the_token(bridge: Bridge, idp: FakeIdP) -> None:
    bridge.post("/login")
    idp.revoked.add(bridge.core.session.current.access_token)
    assert bridge.post("/sync_grades").status_code == 200
    assert idp.hits["records"] == 2 and idp.hits["refresh"] == 1


def test_fifty_concurrent_syncs_share_one_upstream_fetch(bridge: Bridge, idp: FakeIdP) -> None:
    bridge.post("/login")
    flight = bridge.core.sync.flight

    async def hold_until_all_joined() -> None:
        # The records answer waits until all 50 bridge calls have joined the flight (or 10 s pass).
        deadline = time.monotonic() + 10
        while flight.joined < 50 and time.monotonic() < deadline:
            await asyncio.sleep(0.005)

    idp.records_gate = hold_until_all_joined

    async def fifty() -> list[httpx.Response]:
        headers = {"Authorization": f"Bearer {BRIDGE_TOKEN}"}
        limits = httpx.Limits(max_connections=60)
        async with httpx.AsyncClient(base_url=bridge.url, headers=headers, timeout=30, limits=limits) as client:
            return await asyncio.gather(*(client.post("/sync_grades") for _ in range(50)))

    responses = asyncio.run(fifty())
    for response in responses:
        bridge.record(response)
    assert [r.status_code for r in responses] == [200] * 50
    assert idp.hits["records"] == 1
    assert len({r.json()["data"]["synced_at"] for r in responses}) == 1
    idp.records_gate = None
    assert bridge.post("/sync_grades").status_code == 200
    assert idp.hits["records"] == 2  # once landed, the next sync fetches again


def test_status_reports_state_and_bridge_settings_never_the_token(bridge: Bridge) -> None:
    data = _data(bridge.get("/status"))
    assert data["state"] == "signed_out" and data["user"] is None and data["last_sync"] is None
    assert data["bridge"]["port"] == bridge.port and data["bridge"]["host"] == "127.0.0.1"
    assert data["token_storage"]["kind"] == "file"
    bridge.post("/login")
    bridge.post("/sync_grades")
    data = _data(bridge.get("/status"))
    assert data["state"] == "signed_in" and data["courses_cached"] == 3
    assert datetime.fromisoformat(data["last_sync"]).timestamp() <= time.time()


def test_logout_revokes_and_forgets(bridge: Bridge, idp: FakeIdP) -> None:
    bridge.post("/login")
    bridge.post("/sync_grades")
    response = bridge.post("/logout")
    assert _data(response) == {"state": "signed_out", "revoked": True}
    assert idp.hits["revoke"] == 2 and not idp.refresh_tokens
    assert bridge.post("/sync_grades").status_code == 409
    assert bridge.get("/grades").status_code == 409
    assert not (bridge.core.settings.data_dir / "tokens.json").exists()


def test_session_survives_a_restart_of_the_app(bridge: Bridge, browser: HttpBrowser, idp: FakeIdP) -> None:
    from .harness import make_core, start_bridge

    bridge.post("/login")
    restarted = start_bridge(make_core(idp, browser, bridge.core.settings.data_dir))
    try:
        assert _data(restarted.post("/login"))["reused"] is True
        assert len(browser.opened) == 1
    finally:
        restarted.server.stop()


def test_embedded_resources_need_no_token(bridge: Bridge) -> None:
    index = bridge.get("/", token=None)
    assert index.status_code == 200 and index.headers["content-type"].startswith("text/html")
    assert "frame-ancestors 'none'" in index.headers["content-security-policy"]
    css = bridge.get("/static/style.css", token=None)
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert bridge.get("/static/status.js", token=None).status_code == 200
    head = bridge.request("HEAD", "/health", token=None)
    assert head.status_code == 200


def test_openapi_documents_every_operation_and_error_code(bridge: Bridge) -> None:
    from campusid.desktop.bridge.envelope import ERROR_STATUS

    doc = bridge.get("/openapi.json", token=None).json()
    assert doc["openapi"].startswith("3.1")
    for path, method in [
        ("/health", "get"),
        ("/login", "post"),
        ("/sync_grades", "post"),
        ("/grades", "get"),
        ("/status", "get"),
        ("/logout", "post"),
        ("/", "get"),
        ("/openapi.json", "get"),
    ]:
        assert method in doc["paths"][path], path
    assert set(doc["components"]["schemas"]["ErrorCode"]["enum"]) == set(ERROR_STATUS)
    assert doc["paths"]["/grades"]["get"]["x-required-scope"] == "grades.read"
    assert "security" not in doc["paths"]["/health"]["get"]
    assert FULL_SCOPE  # the fake IdP grants the desktop's full scope by default
