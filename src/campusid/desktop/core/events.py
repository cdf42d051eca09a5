"""A framework-free observer hook so a GUI can show status and recent bridge calls.

Callbacks run on whatever thread emitted the event; a Qt GUI re-posts them to its own thread
(e.g. through a queued signal). A failing callback is logged and never breaks the core.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

# Event kinds emitted by the core and the bridge.
STATE_CHANGED = "state_changed"  # data: state, user
LOGIN_URL_OPENED = "login_url_opened"  # data: browser_opened (bool); never the URL's secrets
DEVICE_CODE_SHOWN = "device_code_shown"  # data: verification_uri, user_code, expires_at (never the device code)
SYNC_STARTED = "sync_started"
SYNC_FINISHED = "sync_finished"  # data: courses, synced_at
SYNC_FAILED = "sync_failed"  # data: code, message
TOKEN_STORAGE = "token_storage"  # data: kind, detail (e.g. the keyring-less file fallback)
BRIDGE_CALL = "bridge_call"  # data: method, path, status, duration_ms (no headers, no query)


@dataclass(frozen=True)
class Event:
    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)


Listener = Callable[[Event], None]


class EventBus:
    """Publish/subscribe with a short memory of recent events for late subscribers (a GUI opening)."""

    def __init__(self, history: int = 100) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self.recent: deque[Event] = deque(maxlen=history)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def emit(self, kind: str, /, **data: Any) -> None:
        event = Event(kind, data)
        with self._lock:
            self.recent.append(event)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:
                log.exception("event listener failed for %s", kind)
