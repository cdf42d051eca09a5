"""``create_app``: the bridge's ASGI app for one core, one token and one bound port."""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request

from ..core import CoreError, DesktopCore
from .access_log import AccessLog
from .defences import ASGIApp, BridgeGuard, Receive, Scope, Send
from .envelope import BridgeError, fail
from .handlers import Handler, Handlers
from .lockout import TokenLockout
from .openapi import build_openapi
from .resources import EmbeddedResources
from .settings import BridgeSettings

log = logging.getLogger(__name__)


class _Dispatch:
    """Runs the handler the guard resolved; turns core errors into envelopes."""

    def __init__(self, handlers: dict[str, Handler]) -> None:
        self._handlers = handlers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no lifespan work
        request = Request(scope, receive)
        operation = scope["state"]["operation"]
        try:
            response: Any = await self._handlers[operation.name](request)
        except BridgeError as error:
            response = fail(error)
        except CoreError as error:
            response = fail(BridgeError(error.code, error.message, retry_after=error.retry_after))
        except Exception:
            log.exception("bridge handler %s failed", operation.name)
            response = fail(BridgeError("internal_error", "the bridge failed; see its log"))
        await response(scope, receive, send)


def create_app(core: DesktopCore, settings: BridgeSettings, port: int | None = None) -> ASGIApp:
    """``port`` is the port actually bound (the Host check needs it); defaults to ``settings.port``."""
    bound_port = settings.port if port is None else port
    resources = EmbeddedResources(build_openapi())
    handlers = Handlers(core, settings, bound_port, resources)
    guard = BridgeGuard(
        _Dispatch(handlers.table()),
        token=settings.token,
        port=bound_port,
        max_body=settings.max_body,
        lockout=TokenLockout(settings.failed_token_limit, settings.failed_token_window),
    )
    return AccessLog(guard, core.events)
