"""The ``ApiResponse`` envelope and the bridge's error vocabulary."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime
from typing import Any

from starlette.responses import Response

API_VERSION = "1"

# Every error.code and its HTTP status. The OpenAPI document is built from this table.
ERROR_STATUS: dict[str, int] = {
    "unauthorized": 401,
    "forbidden_origin": 403,
    "insufficient_scope": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "login_timeout": 408,
    "login_in_progress": 409,
    "not_logged_in": 409,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "bad_host": 421,
    "invalid_request": 422,
    "rate_limited": 429,
    "login_failed": 502,
    "upstream_error": 502,
    "upstream_unavailable": 503,
    "internal_error": 500,  # a bug in the bridge, never expected
}


class BridgeError(Exception):
    """One refusal or failure, rendered as an envelope with ``success: false``."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        headers: dict[str, str] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = ERROR_STATUS[code]
        self.headers = dict(headers or {})
        if retry_after is not None:
            self.headers["Retry-After"] = str(max(1, math.ceil(retry_after)))


def rfc3339(moment: datetime) -> str:
    """RFC 3339, UTC, milliseconds, ``Z``: ``2026-11-22T08:15:30.123Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return rfc3339(value)
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class EnvelopeResponse(Response):
    media_type = "application/json"

    def __init__(
        self,
        *,
        data: Any = None,
        error: BridgeError | None = None,
        status_code: int = 200,
        headers: dict[str, str] | None = None,
    ) -> None:
        body = {
            "success": error is None,
            "data": None if error else data,
            "error": {"code": error.code, "message": error.message} if error else None,
            "time": rfc3339(datetime.now(UTC)),
        }
        all_headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
        all_headers.update(headers or {})
        if error is not None:
            all_headers.update(error.headers)
            status_code = error.status
        content = json.dumps(body, default=_default, separators=(",", ":"), ensure_ascii=False)
        super().__init__(content=content, status_code=status_code, headers=all_headers)


def ok(data: Any, status_code: int = 200) -> EnvelopeResponse:
    return EnvelopeResponse(data=data, status_code=status_code)


def fail(error: BridgeError) -> EnvelopeResponse:
    return EnvelopeResponse(error=error)
