"""Core events and finished futures, re-posted to the GUI thread as Qt signals.

The core calls listeners and future callbacks on its worker threads; widgets may only be touched
on the GUI thread, so everything crosses over through a queued connection.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

from ..core.events import Event, EventBus


class CoreRelay(QObject):
    event = Signal(object)  # a core Event, delivered on the GUI thread
    _posted = Signal(object)
    _finished = Signal(object, object)

    def __init__(self, bus: EventBus) -> None:
        super().__init__()
        queued = Qt.ConnectionType.QueuedConnection
        self._posted.connect(self._deliver_event, queued)
        self._finished.connect(self._deliver_future, queued)
        self._unsubscribe = bus.subscribe(self._posted.emit)

    def close(self) -> None:
        self._unsubscribe()

    def watch(self, future: Future[Any], on_done: Callable[[Future[Any]], None]) -> None:
        """Call ``on_done(future)`` on the GUI thread once ``future`` is done."""
        future.add_done_callback(lambda f: self._finished.emit(on_done, f))

    @Slot(object)
    def _deliver_event(self, event: Event) -> None:
        self.event.emit(event)

    @Slot(object, object)
    def _deliver_future(self, on_done: Callable[[Future[Any]], None], future: Future[Any]) -> None:
        on_done(future)
