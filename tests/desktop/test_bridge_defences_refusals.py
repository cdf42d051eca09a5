"""The bridge's request defences that refuse before the token check (Host, Origin, route and
method, size and media type) and their order (bridge/defences.py), over real HTTP. None of these tests
changes the bridge's state, so they share one bridge per module."""

from __future__ import annotations

import httpx
import pytest

from .harness import BRIDGE_TOKEN, Bridge


@pytest.fixture
def bridge(shared_bridge: Bridge) -> Bridge:
    return shared_bridge


def _error(response: httpx.Response) -> str:
    return response.json()["error"]["code"]


# -- Host (DNS rebinding) ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/health", "/status", "/", "/static/style.css", "/openapi.json", "/nope"])
def test_foreign_host_is_421_on_every_route(bridge: Bridge, path: str) -> None:
    response = bridge.get(path, headers={"Host": f"evil.example:{bridge.port}"})
    assert response.status_code == 421
    assert _error(response) == "bad_host"


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}"])
def test_loopback_hosts_are_accepted(bridge: Bridge, host: str) -> None:
    assert bridge.get("/health", headers={"Host": host.format(port=bridge.port)}).status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:1", "localhost", "[::1]:{port}", "127.0.0.2:{port}"])
def test_other_loopback_spellings_are_421(bridge: Bridge, host: str) -> None:
    assert bridge.get("/health", headers={"Host": host.format(port=bridge.port)}).status_code == 421


# -- Origin -------------------------------------------------------------------------------------
@pytest.mark.parametrize("origin", ["https://evil.example", "null", f"http://127.0.0.1:{1}", "http://localhost"])
@pytest.mark.parametrize(("method", "path"), [("GET", "/health"), ("POST", "/login"), ("GET", "/status")])
def test_any_origin_is_403(bridge: Bridge, origin: str, method: str, path: str) -> None:
    response = bridge.request(method, path, headers={"Origin": origin})
    assert response.status_code == 403
    assert _error(response) == "forbidden_origin"
    assert not any(h.lower().startswith("access-control-") for h in response.headers)


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_cross_site_fetch_metadata_is_403(bridge: Bridge, site: str) -> None:
    response = bridge.get("/health", headers={"Sec-Fetch-Site": site})
    assert response.status_code == 403
    assert _error(response) == "forbidden_origin"


def test_same_origin_fetch_metadata_is_allowed(bridge: Bridge) -> None:
    assert bridge.get("/health", headers={"Sec-Fetch-Site": "same-origin"}).status_code == 200


# -- route and method -------------------------------------------------------------------------------
@pytest.mark.parametrize("token", [BRIDGE_TOKEN, None, "wrong" * 8], ids=["right-token", "no-token", "wrong-token"])
@pytest.mark.parametrize("path", ["/nope", "/login/", "/admin", "/static/..%2Fopenapi.json", "/static/missing.css"])
def test_unknown_path_is_404_with_or_without_token(bridge: Bridge, path: str, token: str | None) -> None:
    response = bridge.get(path, token=token)
    assert response.status_code == 404
    assert _error(response) == "not_found"


def test_wrong_method_is_405_with_allow(bridge: Bridge) -> None:
    response = bridge.get("/login")
    assert response.status_code == 405
    assert _error(response) == "method_not_allowed"
    assert response.headers["Allow"] == "POST"
    assert bridge.request("DELETE", "/grades").status_code == 405


@pytest.mark.parametrize("path", ["/health", "/login", "/sync_grades", "/"])
def test_options_is_405_without_cors(bridge: Bridge, path: str) -> None:
    response = bridge.request("OPTIONS", path, headers={"Access-Control-Request-Method": "POST"})
    assert response.status_code == 405
    assert not any(h.lower().startswith("access-control-") for h in response.headers)


# -- size and media type ----------------------------------------------------------------------------
def test_one_mebibyte_body_is_413(bridge: Bridge) -> None:
    body = b'{"force": false, "pad": "' + b"x" * (1024 * 1024) + b'"}'
    response = bridge.post("/login", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert _error(response) == "payload_too_large"


def test_oversized_chunked_body_is_413(bridge: Bridge) -> None:
    def chunks():
        for _ in range(80):
            yield b"x" * 1024

    response = bridge.post("/login", content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 413


def test_body_at_the_limit_passes_the_size_check(bridge: Bridge) -> None:
    body = b"{" + b" " * (64 * 1024 - 2) + b"}"
    response = bridge.post("/sync_grades", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 409  # past size and media type: not signed in
    assert _error(response) == "not_logged_in"


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_non_json_body_is_415(bridge: Bridge, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = bridge.post("/login", content=b"force=true", headers=headers)
    assert response.status_code == 415
    assert _error(response) == "unsupported_media_type"


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b'{"force": "yes"}', b'{"timeout": -1}', b'{"surprise": 1}'])
def test_malformed_login_body_is_422(bridge: Bridge, body: bytes) -> None:
    response = bridge.post("/login", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert _error(response) == "invalid_request"


def test_sync_grades_takes_no_body(bridge: Bridge) -> None:
    response = bridge.post("/sync_grades", json={"student": "someone-else"})
    assert response.status_code == 422


# -- check order --------------------------------------------------------------------------------------
def test_host_is_checked_before_origin(bridge: Bridge) -> None:
    response = bridge.get("/nope", token=None, headers={"Host": "evil.example", "Origin": "null"})
    assert _error(response) == "bad_host"


def test_origin_is_checked_before_route(bridge: Bridge) -> None:
    assert _error(bridge.get("/nope", token=None, headers={"Origin": "null"})) == "forbidden_origin"


def test_route_is_checked_before_size_and_token(bridge: Bridge) -> None:
    response = bridge.post("/nope", token=None, content=b"x" * (128 * 1024))
    assert _error(response) == "not_found"


def test_size_and_media_type_are_checked_before_token(bridge: Bridge) -> None:
    assert _error(bridge.post("/login", token=None, content=b"x" * (128 * 1024))) == "payload_too_large"
    assert _error(bridge.post("/login", token=None, content=b"x", headers={"Content-Type": "text/plain"})) == (
        "unsupported_media_type"
    )
