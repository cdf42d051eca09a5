"""What escapes a handler, answered by the app's one error layer (idp/error_layer.py) and served
by a real uvicorn server over a real socket: an unexpected error is a 500, an unreachable
database a 503 with Retry-After, and in both cases the keep-alive connection goes on serving
(an exception raised on to uvicorn would make it close the connection after the answer)."""

from __future__ import annotations

import json
import logging
import socket
import threading

import pytest
import uvicorn
from starlette.routing import Route

from campusid.idp.store.errors import StoreUnavailable
from tests.conftest import free_port
from tests.idp.conftest import ISSUER, WEB_REDIRECT, IdP


class KeepAlive:
    """One HTTP/1.1 connection, requests written and answers read by hand, so that a closed
    connection is seen as such (an HTTP library would silently open a new one)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buffer = b""

    def request(self, method: str, path: str, body: bytes = b"", **headers: str) -> tuple[int, dict, bytes]:
        lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1:8000", f"Content-Length: {len(body)}"]
        lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = self._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        fields = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in head[1:] if line)}
        return status, fields, self._exactly(int(fields.get("content-length", 0)))

    def _until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            self._more()
        head, self.buffer = self.buffer.split(marker, 1)
        return head

    def _exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._more()
        body, self.buffer = self.buffer[:size], self.buffer[size:]
        return body

    def _more(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.buffer += data

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def served(idp_env):
    """The IdP's app, with two test-only routes that fail, on a uvicorn server in a thread."""
    idp = IdP({**idp_env, "CAMPUSID_ISSUER": ISSUER})

    async def broken(request):
        raise RuntimeError("a bug")

    async def unreachable(request):
        raise StoreUnavailable("connection refused")

    api = next(r.app for r in idp.app.router.routes if getattr(r, "path", "") == "/api/v1")

    async def api_broken():  # FastAPI routes: no parameters (a `request` would be a query field)
        raise RuntimeError("a bug")

    async def api_unreachable():
        raise StoreUnavailable("connection refused")

    api.add_api_route("/test-broken", api_broken)
    api.add_api_route("/test-unreachable", api_unreachable)
    idp.app.router.routes += [
        Route("/oauth/test-broken", broken),
        Route("/broken-page", broken),
        Route("/oauth/test-unreachable", unreachable),
        Route("/unreachable-page", unreachable),
    ]
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(idp.app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(1000):
            if server.started or not thread.is_alive():
                break
            thread.join(0.01)
        assert server.started, "uvicorn did not start"
        idp.port = port
        yield idp
    finally:
        server.should_exit = True
        thread.join(10)
        idp.store.close()


DISCOVERY = "/.well-known/openid-configuration"


def assert_connection_still_serves(conn: KeepAlive) -> None:
    status, headers, body = conn.request("GET", DISCOVERY)
    assert status == 200 and json.loads(body)["issuer"] == ISSUER
    assert headers.get("connection", "").lower() != "close"


def test_an_unexpected_error_is_a_500_and_the_connection_goes_on(served, caplog):
    conn = KeepAlive(served.port)
    with caplog.at_level(logging.INFO):
        status, headers, body = conn.request("GET", "/oauth/test-broken?token=do-not-log-me")
        assert status == 500 and json.loads(body) == {"error": "server_error"}
        assert headers["cache-control"] == "no-store" and headers.get("connection", "").lower() != "close"
        assert_connection_still_serves(conn)
        status, headers, body = conn.request("GET", "/api/v1/test-broken")  # inside the management API
        assert status == 500 and json.loads(body) == {"error": "server_error"}
        assert_connection_still_serves(conn)
        status, headers, body = conn.request("GET", "/broken-page")
        assert status == 500 and headers["content-type"].startswith("text/plain") and b"went wrong" in body
        assert_connection_still_serves(conn)
    conn.close()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        "unhandled error on GET /oauth/test-broken",
        "unhandled error on GET /api/v1/test-broken",
        "unhandled error on GET /broken-page",
    ]
    assert all(r.exc_info and "a bug" in str(r.exc_info[1]) for r in errors)  # each logged once, with its cause
    assert "do-not-log-me" not in caplog.text


def test_an_error_in_a_directly_dispatched_endpoint_is_a_500_and_the_connection_goes_on(served, monkeypatch):
    async def broken(*args, **kwargs):
        raise RuntimeError("a bug in the store")

    monkeypatch.setattr(served.store.apps, "get", broken)
    conn = KeepAlive(served.port)
    form = f"grant_type=authorization_code&code=c&redirect_uri={WEB_REDIRECT}&code_verifier={'v' * 43}".encode()
    status, _, body = conn.request(
        "POST", "/oauth/token", form, Content_Type="application/x-www-form-urlencoded", Authorization="Basic eDp5"
    )
    assert status == 500 and json.loads(body) == {"error": "server_error"}
    assert_connection_still_serves(conn)
    conn.close()


def test_an_unreachable_database_is_a_503_with_retry_after_and_one_log_line(served, monkeypatch, caplog):
    async def down(*args, **kwargs):
        raise StoreUnavailable("connection refused")

    monkeypatch.setattr(served.store.apps, "get", down)
    conn = KeepAlive(served.port)
    form = f"grant_type=authorization_code&code=c&redirect_uri={WEB_REDIRECT}&code_verifier={'v' * 43}".encode()
    with caplog.at_level(logging.INFO):
        for _ in range(10):  # a burst of requests while the database is down
            status, headers, body = conn.request(
                "POST",
                "/oauth/token",
                form,
                Content_Type="application/x-www-form-urlencoded",
                Authorization="Basic eDp5",
            )
            assert status == 503 and headers["retry-after"] == str(StoreUnavailable.retry_after)
            assert json.loads(body)["error"] == "temporarily_unavailable" and headers["cache-control"] == "no-store"
            assert_connection_still_serves(conn)
        status, headers, body = conn.request("GET", "/oauth/test-unreachable")
        assert status == 503 and headers["retry-after"] == "5"
        assert json.loads(body)["error"] == "temporarily_unavailable"
        status, headers, body = conn.request("GET", "/api/v1/test-unreachable")
        assert status == 503 and headers["retry-after"] == "5"
        assert json.loads(body)["error"] == "temporarily_unavailable"
        status, headers, body = conn.request("GET", "/unreachable-page")
        assert status == 503 and headers["retry-after"] == "5"
        assert headers["content-type"].startswith("text/html") and b"temporarily unavailable" in body
        assert_connection_still_serves(conn)
    conn.close()
    ours = [r for r in caplog.records if r.name.startswith("campusid")]
    assert len(ours) == 1, [r.getMessage() for r in ours]  # one line for the whole burst
    assert "database unavailable on POST /oauth/token" in ours[0].getMessage() and not ours[0].exc_info
    assert "Traceback" not in caplog.text
