"""Server-side sessions keyed by a random cookie.

Everything a login needs (state, nonce, PKCE verifier) and the access token stay in this process;
the browser only holds an opaque 256-bit session id, so none of it can be read or
replayed from a cookie or a URL.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from typing import Any

COOKIE = "mygrades_session"


class SessionStore:
    """A bounded in-memory map: session id -> dict, idle sessions expire."""

    def __init__(self, idle_seconds: float = 3600, max_sessions: int = 10_000) -> None:
        self._idle = idle_seconds
        self._max = max_sessions
        self._data: OrderedDict[str, tuple[float, dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, sid: str | None) -> dict[str, Any] | None:
        if not sid:
            return None
        with self._lock:
            entry = self._data.get(sid)
            if entry is None:
                return None
            touched, data = entry
            if time.monotonic() - touched > self._idle:
                del self._data[sid]
                return None
            self._data[sid] = (time.monotonic(), data)
            self._data.move_to_end(sid)
            return data

    def new(self, data: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        sid = secrets.token_urlsafe(32)
        data = {} if data is None else data
        data.setdefault("csrf", secrets.token_urlsafe(32))
        with self._lock:
            self._data[sid] = (time.monotonic(), data)
            while len(self._data) > self._max:
                self._data.popitem(last=False)
        return sid, data

    def rotate(self, sid: str | None, data: dict[str, Any]) -> str:
        """A new id for the same data (after sign-in, against session fixation)."""
        self.drop(sid)
        new_sid, _ = self.new(data)
        data["csrf"] = secrets.token_urlsafe(32)
        return new_sid

    def drop(self, sid: str | None) -> None:
        if sid:
            with self._lock:
                self._data.pop(sid, None)

    def end_signed_in(self, *, sid: str | None, sub: str | None, notice: str) -> int:
        """End the sign-in of every session of the provider's session `sid` (or, without one, of
        the user `sub`): the user is forgotten and `notice` is what the next page says. How many."""
        ended = 0
        with self._lock:
            for _, data in self._data.values():
                user = data.get("user")
                if not user:
                    continue
                if (sid is not None and user.get("sid") == sid) or (sid is None and user.get("sub") == sub):
                    data.pop("user", None)
                    data["notice"] = notice
                    ended += 1
        return ended
