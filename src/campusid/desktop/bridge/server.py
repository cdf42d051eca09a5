"""Serving the bridge with uvicorn over a socket from :func:`listen.bind_loopback`."""

from __future__ import annotations

import logging
import socket
import threading
import time

import uvicorn

from .defences import ASGIApp
from .listen import BridgeStartError


class BridgeServer:
    """uvicorn over an already bound socket; run in the foreground (CLI) or a thread (GUI, tests)."""

    def __init__(self, app: ASGIApp, sock: socket.socket) -> None:
        self.sock = sock
        self.port: int = sock.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_config=None,  # the application configures logging; uvicorn's access log is off
            access_log=False,  # ours (access_log.py) omits headers and query strings
            proxy_headers=False,  # never trust X-Forwarded-*: every peer is this machine
            server_header=False,
            lifespan="off",
            ws="none",
            timeout_graceful_shutdown=3,
        )
        self.server = uvicorn.Server(config)
        # uvicorn's protocol logs a request line (with the query string) whenever "uvicorn.access"
        # has any handler, whatever access_log says; that logger must stay silent in this process.
        logging.getLogger("uvicorn.access").disabled = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve(self) -> None:
        """Serve until interrupted (SIGINT/SIGTERM)."""
        self.server.run(sockets=[self.sock])

    def start_in_thread(self, ready_timeout: float = 10.0) -> None:
        self._thread = threading.Thread(target=self.serve, name="campusid-bridge", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + ready_timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise BridgeStartError("the bridge server did not start")
            time.sleep(0.01)

    def request_stop(self) -> None:
        """Ask the server to finish (returns at once; ``stop`` waits)."""
        self.server.should_exit = True

    def stop(self) -> None:
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.sock.close()
