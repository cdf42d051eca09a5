"""Grade sync: fetch from the records API with the session's token, store in the local cache."""

from __future__ import annotations

from concurrent.futures import Future
from datetime import UTC, datetime

from . import events as ev
from .cache import GradeCache, GradeSnapshot
from .errors import CoreError, UpstreamError
from .records import RecordsClient, TokenRejected
from .session import SessionManager
from .single_flight import SingleFlight


class GradeSync:
    def __init__(self, session: SessionManager, records: RecordsClient, cache: GradeCache, events: ev.EventBus):
        self._session = session
        self._records = records
        self._cache = cache
        self._events = events
        self.flight: SingleFlight[GradeSnapshot] = SingleFlight("grade-sync")

    def start(self) -> Future[GradeSnapshot]:
        """Join the sync in flight or begin one; concurrent callers share one upstream fetch."""
        return self.flight.run(self._sync_once)

    def run(self) -> GradeSnapshot:
        return self.start().result()

    def _sync_once(self) -> GradeSnapshot:
        self._events.emit(ev.SYNC_STARTED)
        try:
            snapshot = self._fetch()
        except CoreError as exc:
            self._events.emit(ev.SYNC_FAILED, code=exc.code, message=exc.message)
            raise
        self._cache.replace(snapshot)
        self._events.emit(ev.SYNC_FINISHED, courses=len(snapshot.grades), synced_at=snapshot.synced_at)
        return snapshot

    def _fetch(self) -> GradeSnapshot:
        token = self._session.access_token()  # NotLoggedIn without a session: a sync never signs in
        try:
            payload = self._records.fetch_grades(token)
        except TokenRejected:
            try:
                payload = self._records.fetch_grades(self._session.refresh_now())
            except TokenRejected:
                raise UpstreamError("the records API rejected a freshly refreshed access token") from None
        return GradeSnapshot(grades=payload.grades, synced_at=datetime.now(UTC), student_name=payload.student_name)
