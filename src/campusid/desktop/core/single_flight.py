"""Single-flight: concurrent callers of the same work share one run and its outcome."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")


class SingleFlight(Generic[T]):
    def __init__(self, name: str = "single-flight") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._future: Future[T] | None = None
        self._joined = 0

    @property
    def joined(self) -> int:
        """How many callers share the run in flight (0 when idle); tests and the GUI read it."""
        with self._lock:
            return self._joined if self._future is not None else 0

    def run(self, work: Callable[[], T]) -> Future[T]:
        """The future of the run in flight, or of a new run of ``work`` on a worker thread."""
        with self._lock:
            if self._future is not None:
                self._joined += 1
                return self._future
            future: Future[T] = Future()
            self._future, self._joined = future, 1
        threading.Thread(target=self._work, args=(work, future), name=self._name, daemon=True).start()
        return future

    def _work(self, work: Callable[[], T], future: Future[T]) -> None:
        future.set_running_or_notify_cancel()  # from now on nobody can cancel the shared future
        try:
            result = work()
        except BaseException as exc:
            self._land(future)
            future.set_exception(exc)
        else:
            self._land(future)
            future.set_result(result)

    def _land(self, future: Future[T]) -> None:
        # Callers arriving after this point start a fresh run: they want data newer than this one.
        with self._lock:
            if self._future is future:
                self._future, self._joined = None, 0
