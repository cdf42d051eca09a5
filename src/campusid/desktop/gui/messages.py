"""Core failures in plain words, with what to do next. No Qt; never shows a token or a code value."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from ..core.errors import CoreError, LoginCancelled, SessionRevoked
from .i18n import Texts

_BY_CODE = {
    "upstream_unavailable": "error.upstream_unavailable",
    "login_timeout": "error.login_timeout",
    "not_logged_in": "error.session_expired",
    "login_failed": "error.login_failed",
    "login_in_progress": "error.login_in_progress",
    "insufficient_scope": "error.insufficient_scope",
    "upstream_error": "error.upstream_error",
}


def describe_error(error: BaseException, texts: Texts, *, now: datetime | None = None) -> str:
    if isinstance(error, LoginCancelled):
        return texts("error.login_cancelled")
    if isinstance(error, SessionRevoked):
        return texts("session.revoked")
    if not isinstance(error, CoreError):
        return texts("error.unexpected", code=type(error).__name__)
    if error.code == "rate_limited":
        if not error.retry_after:
            return texts("error.rate_limited_unknown")
        moment = (now or datetime.now().astimezone()) + timedelta(seconds=error.retry_after)
        return texts(
            "error.rate_limited",
            when=moment.strftime("%H:%M"),
            minutes=max(1, math.ceil(error.retry_after / 60)),
        )
    key = _BY_CODE.get(error.code)
    return texts(key) if key else texts("error.unexpected", code=error.code)
