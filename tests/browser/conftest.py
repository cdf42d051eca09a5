"""The browser tests' IdP: a real `campusid serve` (tests/conftest.py) on a database made in process;
Chromium is tests/conftest.py's `chromium`."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import free_port, start_server
from tests.idp.device_helpers import prepare

PEOPLE = (("sam", "student"), ("dev", "developer"), ("admin", "admin"))


@pytest.fixture
def serve(idp_env):
    """Start `campusid serve` for this test: `people` ((username, role), password PASSWORD) and, given
    `app`, an active native app of that client id whose review granted the device grant
    (tests/idp/device_helpers.prepare). `host` is the issuer's: a passkey wants a domain, not an IP."""
    started = []

    def serve(app: str | None = None, *, scopes=("openid",), people=PEOPLE, host: str = "127.0.0.1"):
        prepare(idp_env, app, people=people, scopes=scopes)
        port = free_port()
        server = start_server({**idp_env, "CAMPUSID_ISSUER": f"http://{host}:{port}"}, port=port)
        started.append(server)
        return server

    yield serve
    for server in started:
        server.stop()


class _Callback(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server API
        self.server.reached.append(self.path)
        body = b"signed in"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args):
        pass


@pytest.fixture
def loopback():
    """The native app's loopback listener (RFC 8252 7.3): records the redirect it receives."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Callback)
    httpd.reached = []
    httpd.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
