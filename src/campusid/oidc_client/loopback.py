"""One-shot loopback redirect receiver for native apps (RFC 8252 sections 7.3 and 8.3).

- Binds an IP literal on the loopback interface only (127.0.0.1 by default, never 0.0.0.0),
  on a port chosen by the OS (``port=0``), before any request can arrive (RFC 8252 section 7.3).
- Serves on a background thread with the stdlib ``http.server``.
- Accepts only GET on the registered path (other paths 404) carrying the expected ``state``
  (a wrong or missing state gets a 400 page and the receiver keeps waiting, RFC 6749 section 10.12).
- Closes after the first valid callback, on timeout (:class:`LoginTimeoutError`) and on context exit.
- Never logs the request line: it carries the authorization code.
"""

from __future__ import annotations

import asyncio
import html
import ipaddress
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import parse_qsl, urlsplit

from .callback import states_equal
from .errors import CallbackError, LoginTimeoutError

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:system-ui,sans-serif;margin:4rem auto;max-width:32rem;text-align:center}}</style>
</head><body><h1>{title}</h1><p>{message}</p></body></html>
"""

_HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False
    receiver: LoopbackReceiver

    def handle_error(self, request: object, client_address: object) -> None:
        """A browser that went away is not an error worth a traceback on stderr."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "campusid-loopback"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Silenced: the default access log would write the authorization code to stderr."""

    def _page(self, status: int, title: str, message: str) -> None:
        body = _PAGE.format(title=html.escape(title), message=html.escape(message)).encode("utf-8")
        self.send_response(status)
        for name, value in _HEADERS.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        self.server.receiver._handle(self)

    def _method_not_allowed(self) -> None:
        self._page(405, "Not allowed", "This address only receives the sign-in redirect.")

    do_POST = do_PUT = do_DELETE = do_PATCH = _method_not_allowed  # noqa: N815
    # HEAD and OPTIONS fall back to the stdlib 501 answer.


class LoopbackReceiver:
    """Receive one authorization response on ``http://127.0.0.1:{port}{path}``.

    Use as a context manager; :attr:`redirect_uri` is known as soon as it is created::

        with LoopbackReceiver() as receiver:
            req = client.authorization_request(redirect_uri=receiver.redirect_uri)
            webbrowser.open(req.url)
            params = receiver.wait(req.state)
        tokens = client.handle_callback(req, params)
    """

    def __init__(self, path: str = "/callback", host: str = "127.0.0.1", port: int = 0, timeout: float = 300.0) -> None:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise ValueError("host must be a loopback IP literal such as 127.0.0.1 (RFC 8252 section 8.3)") from None
        if address.version != 4 or not address.is_loopback:
            raise ValueError("host must be an IPv4 loopback address such as 127.0.0.1")
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        self.path = path
        self.timeout = timeout
        self._cond = threading.Condition()
        self._expected_state: str | None = None
        self._result: dict[str, str] | None = None
        self._closed = False
        self._server = _Server((host, port), _Handler)  # bound now, before the URL is handed out
        self._server.receiver = self
        self.host, self.port = self._server.server_address[:2]
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="oidc-loopback",
            daemon=True,
        )
        self._thread.start()

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    @property
    def closed(self) -> bool:
        return self._closed

    # --- request handling (server threads) ---------------------------------------------------

    def _handle(self, handler: _Handler) -> None:
        url = urlsplit(handler.path)
        if url.path != self.path:
            handler._page(404, "Not found", "This address only receives the sign-in redirect.")
            return
        pairs = parse_qsl(url.query, keep_blank_values=True)
        params = dict(pairs)
        if len(params) != len(pairs):
            handler._page(400, "Sign-in response not accepted", "The response repeats a parameter.")
            return
        with self._cond:
            # The browser may be faster than the app's call to wait(); hold the request until then.
            deadline = time.monotonic() + self.timeout
            while self._expected_state is None and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            expected, done = self._expected_state, self._closed or self._result is not None
            valid = not done and expected is not None and states_equal(expected, params.get("state"))
            if valid:
                self._result = params
        if done:
            handler._page(410, "Sign-in already finished", "You can close this window.")
            return
        if not valid:
            handler._page(
                400,
                "Sign-in response not accepted",
                "This response does not belong to the sign-in in progress. "
                "Please go back to the application and try again.",
            )
            return
        if "error" in params:
            handler._page(200, "Sign-in not completed", "You can close this window and return to the application.")
        else:
            handler._page(200, "Signed in", "You can close this window and return to the application.")
        with self._cond:
            self._cond.notify_all()

    # --- application side ----------------------------------------------------------------------

    def wait(self, expected_state: str) -> dict[str, str]:
        """Block until a callback with ``expected_state`` arrives; return its query parameters.

        Raises :class:`LoginTimeoutError` after ``timeout`` seconds. The receiver is closed either way.
        """
        if not expected_state:
            raise ValueError("expected_state is required")
        deadline = time.monotonic() + self.timeout
        try:
            with self._cond:
                if self._closed:
                    raise CallbackError("the loopback receiver is closed")
                self._expected_state = expected_state
                self._cond.notify_all()
                while self._result is None and not self._closed:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise LoginTimeoutError(f"no sign-in response within {self.timeout:g} seconds")
                    self._cond.wait(remaining)
                if self._result is None:
                    raise CallbackError("the loopback receiver was closed while waiting")
                return dict(self._result)
        finally:
            self.close()

    async def wait_async(self, expected_state: str) -> dict[str, str]:
        """:meth:`wait` on a worker thread; cancelling the task closes the receiver."""
        try:
            return await asyncio.to_thread(self.wait, expected_state)
        except asyncio.CancelledError:
            self.close()
            raise

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> LoopbackReceiver:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
