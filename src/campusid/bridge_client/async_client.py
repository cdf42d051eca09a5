"""Asyncio client for the campusid desktop bridge (for chat bots and other async programs)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from . import _protocol as p
from .models import GradeReport, Health, LoginResult


class AsyncBridgeClient:
    """The async twin of :class:`~campusid.bridge_client.BridgeClient`; same arguments, same errors."""

    def __init__(
        self,
        base_url: str = p.DEFAULT_BASE_URL,
        token: str | None = None,
        *,
        rate_limit_retries: int = 0,
        max_retry_wait: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=p.headers(p.resolve_token(token)), transport=transport
        )
        self._retries = rate_limit_retries
        self._max_wait = max_retry_wait

    async def _call(self, call: p.Call) -> Any:
        attempt = 0
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, json=call.json, timeout=p.httpx_timeout(call)
                )
            except httpx.TransportError as exc:
                raise p.unreachable(self.base_url, exc) from None
            try:
                return p.unwrap(response)
            except p.BridgeError as error:
                wait = p.should_retry(error, attempt, self._retries, self._max_wait)
                if wait is None:
                    raise
            attempt += 1
            await asyncio.sleep(wait)

    async def health(self) -> Health:
        return Health(**await self._call(p.Call("GET", "/health")))

    async def login(
        self, force: bool = False, timeout: float | None = None, wait: bool = True, method: str = "browser"
    ) -> LoginResult:
        return LoginResult.from_data(await self._call(p.login_call(force, timeout, wait, method)))

    async def device_login(self, force: bool = False) -> LoginResult:
        return await self.login(force=force, method="device")

    async def wait_for_login(self, timeout: float = p.DEVICE_WAIT, poll_every: float = p.STATUS_POLL) -> LoginResult:
        deadline = time.monotonic() + timeout
        while True:
            outcome = p.login_outcome(await self.status())
            if outcome is not None:
                return outcome
            if time.monotonic() >= deadline:
                raise p.waited_too_long()
            await asyncio.sleep(poll_every)

    async def sync_grades(self) -> GradeReport:
        return GradeReport.from_data(await self._call(p.Call("POST", "/sync_grades", read_timeout=p.SYNC_TIMEOUT)))

    async def grades(self) -> GradeReport:
        return GradeReport.from_data(await self._call(p.Call("GET", "/grades")))

    async def status(self) -> dict[str, Any]:
        return await self._call(p.Call("GET", "/status"))

    async def logout(self) -> dict[str, Any]:
        return await self._call(p.Call("POST", "/logout", read_timeout=p.SYNC_TIMEOUT))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncBridgeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
