"""Blocking client for the campusid desktop bridge."""

from __future__ import annotations

import time
from typing import Any

import httpx

from . import _protocol as p
from .models import GradeReport, Health, LoginResult


class BridgeClient:
    """Talks to ``campusid-desktop``'s bridge on 127.0.0.1.

    ``token`` defaults to ``$APP_BRIDGE_TOKEN``. A rate-limited call (429) is retried up to
    ``rate_limit_retries`` times when its ``Retry-After`` is at most ``max_retry_wait`` seconds;
    otherwise :class:`~campusid.bridge_client.RateLimited` is raised with ``retry_after`` set.
    """

    def __init__(
        self,
        base_url: str = p.DEFAULT_BASE_URL,
        token: str | None = None,
        *,
        rate_limit_retries: int = 0,
        max_retry_wait: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url, headers=p.headers(p.resolve_token(token)), transport=transport
        )
        self._retries = rate_limit_retries
        self._max_wait = max_retry_wait

    def _call(self, call: p.Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._http.request(call.method, call.path, json=call.json, timeout=p.httpx_timeout(call))
            except httpx.TransportError as exc:
                raise p.unreachable(self.base_url, exc) from None
            try:
                return p.unwrap(response)
            except p.BridgeError as error:
                wait = p.should_retry(error, attempt, self._retries, self._max_wait)
                if wait is None:
                    raise
            attempt += 1
            time.sleep(wait)

    def health(self) -> Health:
        return Health(**self._call(p.Call("GET", "/health")))

    def login(
        self, force: bool = False, timeout: float | None = None, wait: bool = True, method: str = "browser"
    ) -> LoginResult:
        """Sign in (or reuse the session). ``method="device"`` signs in without a browser on this
        machine (RFC 8628): the result is pending, and its ``device`` holds the code to show the
        person; then :meth:`wait_for_login`."""
        return LoginResult.from_data(self._call(p.login_call(force, timeout, wait, method)))

    def device_login(self, force: bool = False) -> LoginResult:
        """``login(method="device")``: reused session (``pending`` false), or the code to show."""
        return self.login(force=force, method="device")

    def wait_for_login(self, timeout: float = p.DEVICE_WAIT, poll_every: float = p.STATUS_POLL) -> LoginResult:
        """Poll ``/status`` until the pending sign-in finishes: the session, or the typed error
        (:class:`LoginFailed` when denied, :class:`LoginTimeout` when the code expired)."""
        deadline = time.monotonic() + timeout
        while True:
            outcome = p.login_outcome(self.status())
            if outcome is not None:
                return outcome
            if time.monotonic() >= deadline:
                raise p.waited_too_long()
            time.sleep(poll_every)

    def sync_grades(self) -> GradeReport:
        return GradeReport.from_data(self._call(p.Call("POST", "/sync_grades", read_timeout=p.SYNC_TIMEOUT)))

    def grades(self) -> GradeReport:
        return GradeReport.from_data(self._call(p.Call("GET", "/grades")))

    def status(self) -> dict[str, Any]:
        return self._call(p.Call("GET", "/status"))

    def logout(self) -> dict[str, Any]:
        return self._call(p.Call("POST", "/logout", read_timeout=p.SYNC_TIMEOUT))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> BridgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
