"""The bridge's token defence (strict Bearer, no query string, lockout), one login at a
time, and secrets kept out of logs and responses, over real HTTP with a fresh bridge per test."""

from __future__ import annotations

import logging

import httpx
import pytest

from campusid.desktop.core.oidc import OPEN_BROWSER_THREAD

from .harness import BRIDGE_TOKEN, Bridge, HttpBrowser, wait_until

TOKEN_ROUTES = [
    ("POST", "/login"),
    ("POST", "/sync_grades"),
    ("GET", "/grades"),
    ("GET", "/status"),
    ("POST", "/logout"),
]


def _error(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


# -- token ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("method", "path"), TOKEN_ROUTES)
def test_no_token_is_401_with_bearer_challenge(bridge: Bridge, method: str, path: str) -> None:
    response = bridge.request(method, path, token=None)
    assert response.status_code == 401
    assert _error(response) == "unauthorized"
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")


def test_wrong_token_is_401(bridge: Bridge) -> None:
    response = bridge.get("/status", token=BRIDGE_TOKEN[:-1] + ("A" if BRIDGE_TOKEN[-1] != "A" else "B"))
    assert response.status_code == 401
    assert _error(response) == "unauthorized"
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="campusid-bridge", error="invalid_token"'


@pytest.mark.parametrize(
    "header",
    [
        f"Basic {BRIDGE_TOKEN}",
        f"Bearer  {BRIDGE_TOKEN}",
        f"Bearer {BRIDGE_TOKEN} x",
        BRIDGE_TOKEN,
        f"Bearer {BRIDGE_TOKEN},x",
    ],
)
def test_bearer_token_is_parsed_strictly(bridge: Bridge, header: str) -> None:
    response = bridge.get("/status", token=None, headers={"Authorization": header})
    assert response.status_code == 401


def test_right_token_is_accepted_and_scheme_is_case_insensitive(bridge: Bridge) -> None:
    assert bridge.get("/status").status_code == 200
    assert bridge.get("/status", token=None, headers={"Authorization": f"bearer {BRIDGE_TOKEN}"}).status_code == 200


@pytest.mark.parametrize("param", ["access_token", "token", "bridge_token"])
def test_token_in_query_string_only_is_401(bridge: Bridge, param: str) -> None:
    response = bridge.get(f"/status?{param}={BRIDGE_TOKEN}", token=None)
    assert response.status_code == 401
    assert _error(response) == "unauthorized"


def test_lockout_after_ten_failed_token_checks(bridge: Bridge) -> None:
    for _ in range(10):
        assert bridge.get("/status", token="x" * 40).status_code == 401
    locked = bridge.get("/status")  # even the right token, for the rest of the minute
    assert locked.status_code == 429
    assert _error(locked) == "rate_limited"
    assert 1 <= int(locked.headers["Retry-After"]) <= 60
    assert bridge.post("/sync_grades").status_code == 429
    assert bridge.get("/health", token=None).status_code == 200  # routes without a token still answer


def test_nine_failures_do_not_lock(bridge: Bridge) -> None:
    for _ in range(9):
        bridge.get("/status", token="x" * 40)
    assert bridge.get("/status").status_code == 200


# -- one login at a time --------------------------------------------------------------------------------
def test_second_login_while_one_waits_is_409(bridge: Bridge, browser: HttpBrowser) -> None:
    browser.finish = False  # the person has not finished in the browser yet
    first = bridge.post("/login", json={"wait": False})
    assert first.status_code == 202
    wait_until(lambda: browser.opened, what="the browser to open")
    assert bridge.get("/status").json()["data"]["state"] == "waiting_for_browser"
    second = bridge.post("/login")
    assert second.status_code == 409
    assert _error(second) == "login_in_progress"
    browser.complete()  # the person finishes; the first login completes
    wait_until(lambda: bridge.get("/status").json()["data"]["state"] == "signed_in", what="sign-in")
    assert len(browser.opened) == 1


def test_login_nobody_finishes_is_408(bridge: Bridge, browser: HttpBrowser) -> None:
    browser.finish = False
    response = bridge.post("/login", json={"timeout": 0.3})
    assert response.status_code == 408
    assert _error(response) == "login_timeout"
    assert bridge.get("/status").json()["data"]["state"] == "signed_out"


# -- secrets stay out of logs and responses ---------------------------------------------------------
def test_secrets_are_in_no_log_line_and_no_response(bridge: Bridge, idp, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bridge.get("/health", token=None)
    bridge.post("/login")
    bridge.post("/sync_grades")
    bridge.get("/grades")
    bridge.get("/status")
    bridge.get(f"/status?access_token={BRIDGE_TOKEN}", token=None)
    bridge.get("/nope")
    bridge.get("/status", token="w" * 43)
    bridge.post("/logout")
    session_secrets = [BRIDGE_TOKEN, *idp.issued]  # bridge token, codes, access and refresh tokens
    assert len(session_secrets) >= 4
    # The test's own HTTP clients (the test itself, and the stand-in browser, which the app runs on
    # its "open browser" thread) log their URLs; every other line is the app's.
    test_threads = {"MainThread", OPEN_BROWSER_THREAD}
    lines = [
        r.getMessage()
        for r in caplog.records
        if not (r.name.startswith(("httpx", "httpcore")) and r.threadName in test_threads)
    ]
    assert any("GET /status 200" in line for line in lines), "the access log must have run"
    for secret in session_secrets:
        assert not any(secret in line for line in lines)
        for response in bridge.responses:
            assert secret not in response.text
            assert not any(secret in v for v in response.headers.values())


def test_access_log_omits_query_and_headers(bridge: Bridge, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="campusid.desktop.bridge.access")
    bridge.get("/health?code=secret-code-value", token=None, headers={"X-Test": "header-value"})
    access = [r.getMessage() for r in caplog.records if r.name == "campusid.desktop.bridge.access"]
    assert access and access[-1].startswith("GET /health 200")
    assert "secret-code-value" not in caplog.text
    assert "header-value" not in caplog.text


def test_every_response_so_far_validated_against_the_envelope(bridge: Bridge) -> None:
    for path in ["/health", "/status", "/nope", "/grades"]:
        bridge.get(path)
    assert bridge.checker is not None and bridge.checker.checked == 4
