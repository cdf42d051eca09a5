"""The bridge inside the window's process: started on a thread, with its status for the window."""

from __future__ import annotations

import logging

from ..bridge.listen import BridgeStartError, bind_loopback
from ..bridge.settings import BridgeSettings
from ..core import DesktopCore

log = logging.getLogger(__name__)


class BridgeHost:
    """Runs the bridge or says why it does not; the window still works without it."""

    def __init__(self, core: DesktopCore, settings: BridgeSettings | None, config_error: Exception | None) -> None:
        self._core = core
        self._settings = settings
        self._server = None
        self.address: str | None = None
        self.reason: str | None = None if settings is not None else str(config_error or "not configured")

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> bool:
        if self._settings is None or self._server is not None:
            return self.running
        from ..bridge.app import create_app  # the web stack loads only when the bridge can start
        from ..bridge.server import BridgeServer

        try:
            sock = bind_loopback(self._settings.host, self._settings.port)
            port = sock.getsockname()[1]
            server = BridgeServer(create_app(self._core, self._settings, port=port), sock)
            server.start_in_thread()
        except BridgeStartError as exc:
            self.reason = str(exc)
            log.warning("the bridge cannot start: %s", exc)
            return False
        self._server, self.address, self.reason = server, server.url, None
        log.info("bridge listening on %s", server.url)
        return True

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.stop()
            self.reason = None
