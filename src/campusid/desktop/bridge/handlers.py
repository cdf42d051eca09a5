"""The bridge's operations: thin async faces over :class:`DesktopCore`.

The defences have already run when a handler is called; a handler only parses its body,
calls the core (blocking work goes to a thread) and shapes ``data``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..core import DesktopCore, GradeSnapshot, LoginResult, device_prompt_data
from .envelope import API_VERSION, BridgeError, ok
from .resources import EmbeddedResources
from .settings import BridgeSettings

T = TypeVar("T")
Handler = Callable[[Request], Awaitable[Response]]
# How long POST /login {"method": "device"} waits for the IdP to hand out a user code.
DEVICE_START_TIMEOUT = 30.0


class LoginBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    force: bool = False
    timeout: float = Field(default=300.0, gt=0, le=3600)
    wait: bool = True
    method: Literal["browser", "device"] = "browser"


async def _shared(future: Future[T]) -> T:
    # shield: a caller that disconnects must not cancel the work other callers share.
    return await asyncio.shield(asyncio.wrap_future(future))


async def _json_object(request: Request) -> dict[str, Any]:
    body = await request.body()
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except ValueError:
        raise BridgeError("invalid_request", "the body is not valid JSON") from None
    if not isinstance(value, dict):
        raise BridgeError("invalid_request", "the body must be a JSON object")
    return value


def _grades_data(snapshot: GradeSnapshot) -> dict[str, Any]:
    return {"grades": snapshot.grades, "synced_at": snapshot.synced_at}


def _login_data(result: LoginResult) -> dict[str, Any]:
    session = result.session
    return {
        "user": {"name": session.user_name},
        "expires_at": datetime.fromtimestamp(session.expires_at, UTC),
        "reused": result.reused,
    }


class Handlers:
    def __init__(self, core: DesktopCore, settings: BridgeSettings, port: int, resources: EmbeddedResources):
        self.core = core
        self.settings = settings
        self.port = port
        self.resources = resources

    def table(self) -> dict[str, Handler]:
        return {
            "health": self.health,
            "login": self.login,
            "sync_grades": self.sync_grades,
            "grades": self.grades,
            "status": self.status,
            "logout": self.logout,
            "index": self.index,
            "openapi": self.openapi,
            "static": self.static,
        }

    async def health(self, request: Request) -> Response:
        return ok({"status": "ok", "api_version": API_VERSION, "logged_in": self.core.logged_in})

    async def login(self, request: Request) -> Response:
        try:
            body = LoginBody.model_validate(await _json_object(request))
        except ValidationError as exc:
            fields = ", ".join(".".join(str(p) for p in e["loc"]) or "body" for e in exc.errors())
            raise BridgeError("invalid_request", f"invalid login options: {fields}") from None
        future = self.core.start_login(force=body.force, timeout=body.timeout, method=body.method)
        if body.method == "device":
            return await self._device_login(future)
        if not body.wait:
            return ok({"pending": True, "state": self.core.session.state.value, "status_url": "/status"}, 202)
        return ok(_login_data(await _shared(future)))

    async def _device_login(self, future: Future[LoginResult]) -> Response:
        """RFC 8628: answer 202 with the user code as soon as the IdP has given one (the person
        enters it on another device; /status shows the sign-in finish), or the session at once
        when one is reused (200), or the failure."""
        session = self.core.session
        prompt = await run_in_threadpool(session.wait_for_device_prompt, future, DEVICE_START_TIMEOUT)
        if prompt is not None:
            data = {"pending": True, "method": "device", "state": session.state.value, "status_url": "/status"}
            return ok({**data, **device_prompt_data(prompt)}, 202)
        if not future.done():
            session.cancel_login()
            raise BridgeError("upstream_unavailable", "the identity provider did not hand out a device code in time")
        return ok(_login_data(await _shared(future)))

    async def sync_grades(self, request: Request) -> Response:
        if await _json_object(request):
            raise BridgeError("invalid_request", "/sync_grades takes no body")
        return ok(_grades_data(await _shared(self.core.start_sync())))

    async def grades(self, request: Request) -> Response:
        return ok(_grades_data(await run_in_threadpool(self.core.cached_grades)))

    async def status(self, request: Request) -> Response:
        data = await run_in_threadpool(self.core.status)
        data["login_pending"] = self.core.session.login_pending
        data["bridge"] = {
            "host": self.settings.host,
            "port": self.port,
            "api_version": API_VERSION,
            "max_body_bytes": self.settings.max_body,
            "token_configured": True,
        }
        return ok(data)

    async def logout(self, request: Request) -> Response:
        revoked = await run_in_threadpool(self.core.logout)
        return ok({"state": "signed_out", "revoked": revoked})

    async def index(self, request: Request) -> Response:
        return self.resources.index_response()

    async def openapi(self, request: Request) -> Response:
        return self.resources.openapi_response()

    async def static(self, request: Request) -> Response:
        name = request.url.path.removeprefix("/static/")
        response = self.resources.static_response(name)
        if response is None:
            raise BridgeError("not_found", "no such static file")
        return response
