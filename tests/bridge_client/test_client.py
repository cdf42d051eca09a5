"""The SDK against a real bridge (and, for retry and timeout rules, a mock transport)."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from campusid.bridge_client import (
    AsyncBridgeClient,
    BridgeClient,
    BridgeError,
    BridgeUnavailable,
    GradeReport,
    LoginInProgress,
    NotLoggedIn,
    RateLimited,
    Unauthorized,
)
from tests.desktop.fake_idp import FakeIdP
from tests.desktop.harness import BRIDGE_TOKEN, Bridge, HttpBrowser, wait_until


def test_sync_client_round_trip(bridge: Bridge, browser: HttpBrowser) -> None:
    with BridgeClient(bridge.url, BRIDGE_TOKEN) as client:
        assert client.health().logged_in is False
        first = client.login()
        assert first.user_name == "Ada Student" and first.reused is False and first.expires_at is not None
        assert client.login().reused is True
        report = client.sync_grades()
        assert isinstance(report, GradeReport)
        assert [g.course_code for g in report.grades] == ["CS101", "MA102", "PH110"]
        assert report.grades[0].credits == 5 and report.grades[0].grade_point == 4.0
        assert client.grades() == report
        assert client.status()["state"] == "signed_in"
        assert client.logout()["state"] == "signed_out"
        with pytest.raises(NotLoggedIn) as raised:
            client.sync_grades()
    assert raised.value.status == 409 and raised.value.code == "not_logged_in"
    assert len(browser.opened) == 1


async def test_async_client_round_trip(bridge: Bridge) -> None:
    async with AsyncBridgeClient(bridge.url, BRIDGE_TOKEN) as client:
        assert (await client.health()).api_version == "1"
        assert (await client.login()).user_name == "Ada Student"
        report = await client.sync_grades()
        assert len(report.grades) == 3 and report.synced_at is not None
        assert (await client.grades()).synced_at == report.synced_at


def test_token_defaults_to_the_environment(bridge: Bridge, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("APP_BRIDGE_TOKEN", BRIDGE_TOKEN)
    with BridgeClient(bridge.url) as client:
        assert client.status()["state"] == "signed_out"


def test_unauthorized_is_typed(bridge: Bridge) -> None:
    with BridgeClient(bridge.url, "nope" * 10) as client, pytest.raises(Unauthorized) as raised:
        client.status()
    assert raised.value.status == 401 and isinstance(raised.value, BridgeError)


def test_login_in_progress_is_typed(bridge: Bridge, browser: HttpBrowser) -> None:
    browser.finish = False
    with BridgeClient(bridge.url, BRIDGE_TOKEN) as client:
        assert client.login(wait=False).pending is True
        wait_until(lambda: browser.opened, what="the browser to open")
        with pytest.raises(LoginInProgress):
            client.login()
        browser.complete()


def test_idp_rate_limit_carries_retry_after(bridge: Bridge, idp: FakeIdP) -> None:
    idp.token_retry_after = 17
    with BridgeClient(bridge.url, BRIDGE_TOKEN) as client, pytest.raises(RateLimited) as raised:
        client.login()
    assert raised.value.retry_after == 17 and raised.value.status == 429


def test_no_bridge_is_bridge_unavailable() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with BridgeClient(f"http://127.0.0.1:{port}", BRIDGE_TOKEN) as client, pytest.raises(BridgeUnavailable):
        client.health()


# -- retry and timeout rules, with a mock transport ------------------------------------------------------
def _envelope(status: int, data=None, code: str | None = None, retry_after: str | None = None) -> httpx.Response:
    body = {
        "success": code is None,
        "data": data,
        "error": {"code": code, "message": "m"} if code else None,
        "time": "2026-11-22T08:15:30.123Z",
    }
    headers = {"Retry-After": retry_after} if retry_after else {}
    return httpx.Response(status, json=body, headers=headers)


def test_rate_limited_call_is_retried_after_retry_after() -> None:
    answers = [_envelope(429, code="rate_limited", retry_after="0"), _envelope(200, {"grades": [], "synced_at": None})]
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    client = BridgeClient(
        "http://127.0.0.1:4399", "t" * 40, rate_limit_retries=2, transport=httpx.MockTransport(handler)
    )
    assert client.grades().grades == []
    assert len(seen) == 2


def test_retry_after_longer_than_the_bound_is_raised() -> None:
    transport = httpx.MockTransport(lambda r: _envelope(429, code="rate_limited", retry_after="120"))
    client = BridgeClient(
        "http://127.0.0.1:4399", "t" * 40, rate_limit_retries=3, max_retry_wait=5, transport=transport
    )
    with pytest.raises(RateLimited) as raised:
        client.sync_grades()
    assert raised.value.retry_after == 120


def test_no_retry_by_default() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return _envelope(429, code="rate_limited", retry_after="0")

    with pytest.raises(RateLimited):
        BridgeClient("http://127.0.0.1:4399", "t" * 40, transport=httpx.MockTransport(handler)).status()
    assert len(calls) == 1


@pytest.mark.parametrize(("timeout", "minimum"), [(None, 330), (600, 630), (5, 35)])
def test_login_read_timeout_outlasts_the_login_timeout(timeout: float | None, minimum: float) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return _envelope(200, {"user": {"name": "A"}, "expires_at": "2026-11-22T08:15:30.123Z", "reused": True})

    client = BridgeClient("http://127.0.0.1:4399", "t" * 40, transport=httpx.MockTransport(handler))
    assert client.login(timeout=timeout).reused is True
    assert seen[0].extensions["timeout"]["read"] >= minimum
    body = json.loads(seen[0].content)
    assert body.get("timeout") == timeout and body["wait"] is True
    assert seen[0].headers["Authorization"] == "Bearer " + "t" * 40


def test_non_envelope_answer_is_a_protocol_error() -> None:
    transport = httpx.MockTransport(lambda r: httpx.Response(502, text="<html>proxy error</html>"))
    with pytest.raises(BridgeError) as raised:
        BridgeClient("http://127.0.0.1:4399", "t" * 40, transport=transport).health()
    assert raised.value.code == "protocol_error"


async def test_async_retry_honours_retry_after() -> None:
    answers = [
        _envelope(429, code="rate_limited", retry_after="0"),
        _envelope(200, {"status": "ok", "api_version": "1", "logged_in": False}),
    ]
    client = AsyncBridgeClient(
        "http://127.0.0.1:4399", "t" * 40, rate_limit_retries=1, transport=httpx.MockTransport(lambda r: answers.pop(0))
    )
    assert (await client.health()).status == "ok"
    await client.aclose()
