"""The bridge's sign-in without a browser on the machine (POST /login {"method": "device"}, RFC 8628)
against campusid's own IdP over real HTTP: 202 with the code to show, /status showing the sign-in
finish, the SDK's device_login() and wait_for_login(), and each way it can end. The device polls
at the IdP's 5-second interval, so each test waits one interval (a real one: the desktop app's
polling is what is under test)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from campusid.bridge_client import BridgeClient, LoginFailed, LoginTimeout
from tests.desktop.harness import BRIDGE_TOKEN, Bridge
from tests.desktop.real_idp import ServedIdP
from tests.idp.device_helpers import device_app

pytestmark = pytest.mark.slow


def test_the_sdk_signs_in_with_a_code_and_status_shows_it_finish(device_bridge: Bridge, served_idp: ServedIdP):
    with BridgeClient(device_bridge.url, BRIDGE_TOKEN) as sdk:
        r = device_bridge.post("/login", json={"method": "device"})
        assert r.status_code == 202
        data = r.json()["data"]
        assert data["verification_uri"] == f"{served_idp.issuer}/device" and data["state"] == "waiting_for_device"
        assert data["verification_uri_complete"].endswith(data["user_code"])
        expires = datetime.fromisoformat(data["expires_at"])
        assert 590 < (expires - datetime.now(UTC)).total_seconds() <= 600
        status = device_bridge.get("/status").json()["data"]
        assert status["state"] == "waiting_for_device" and status["login_pending"] is True
        assert status["device_login"]["user_code"] == data["user_code"]
        assert device_bridge.post("/login", json={"method": "device"}).json()["error"]["code"] == "login_in_progress"
        served_idp.decide(data["user_code"].lower())
        result = sdk.wait_for_login(timeout=30, poll_every=0.1)
        assert result.user_name == "Alice Zhang" and not result.pending
        status = device_bridge.get("/status").json()["data"]
        assert status["state"] == "signed_in" and status["device_login"] is None and status["last_login_error"] is None
        assert sdk.sync_grades().grades == []  # the access token works at the records API
        again = sdk.device_login()
        assert again.reused and not again.pending and again.user_name == "Alice Zhang"
    events = device_bridge.core.events.recent
    shown = [e for e in events if e.kind == "device_code_shown"]
    assert len(shown) == 1 and shown[0].data["user_code"] == data["user_code"]


def test_a_denial_ends_the_wait_with_login_failed(device_bridge: Bridge, served_idp: ServedIdP):
    with BridgeClient(device_bridge.url, BRIDGE_TOKEN) as sdk:
        started = sdk.device_login()
        assert started.pending and started.device.user_code in started.device.message()
        served_idp.decide(started.device.user_code, "deny")
        with pytest.raises(LoginFailed, match="denied"):
            sdk.wait_for_login(timeout=30, poll_every=0.1)
    status = device_bridge.get("/status").json()["data"]
    assert status["state"] == "signed_out" and status["last_login_error"]["code"] == "login_failed"


def test_an_expired_code_ends_the_wait_with_login_timeout(device_bridge: Bridge, served_idp: ServedIdP):
    with BridgeClient(device_bridge.url, BRIDGE_TOKEN) as sdk:
        assert sdk.device_login().pending
        served_idp.clock.advance(601)  # the IdP's clock: its next answer is expired_token
        with pytest.raises(LoginTimeout):
            sdk.wait_for_login(timeout=30, poll_every=0.1)
    assert device_bridge.get("/status").json()["data"]["last_login_error"]["code"] == "login_timeout"


def test_an_app_without_the_grant_is_a_login_failed_at_once(device_bridge: Bridge, served_idp: ServedIdP):
    device_app(served_idp.idp, "no-device", granted=False)
    device_bridge.core.oidc._client_id = "no-device"  # the same desktop app, registered without it
    r = device_bridge.post("/login", json={"method": "device"})
    assert r.status_code == 502 and r.json()["error"]["code"] == "login_failed"
    assert "unauthorized_client" in r.json()["error"]["message"]


@pytest.mark.parametrize("body", [{"method": "pigeon"}, {"method": 1}, {"method": "device", "extra": True}])
def test_a_bad_method_is_invalid_request(device_bridge: Bridge, body):
    r = device_bridge.post("/login", json=body)
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid_request"
    assert device_bridge.get("/status").json()["data"]["login_pending"] is False
