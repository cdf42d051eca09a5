"""The failed-token throttle: 10 failed checks within 60 s lock token routes for a minute."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable


class TokenLockout:
    def __init__(self, limit: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic):
        self._limit = limit
        self._window = window
        self._clock = clock
        self._failures: deque[float] = deque()
        self._locked_until = 0.0

    def retry_after(self) -> float | None:
        """Seconds until token routes answer again, or ``None`` when not locked."""
        remaining = self._locked_until - self._clock()
        return remaining if remaining > 0 else None

    def record_failure(self) -> None:
        now = self._clock()
        self._failures.append(now)
        while self._failures and self._failures[0] <= now - self._window:
            self._failures.popleft()
        if len(self._failures) >= self._limit:
            self._locked_until = now + self._window
            self._failures.clear()
