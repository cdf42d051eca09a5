"""Core failures in plain words, with what to do next. No Qt; never shows a token or a code value."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from campusid.i18n import N_, N_plural, Translator

from ..core.errors import CoreError, LoginCancelled, SessionRevoked

_BY_CODE = {
    "upstream_unavailable": N_(
        "CampusID cannot be reached right now. Check your internet connection and try again in a few minutes."
    ),
    "login_timeout": N_("The sign-in was not finished in the browser in time. Select “Sign in” to try again."),
    "not_logged_in": N_(
        "Your session has expired. Select “Sign in” to sign in again; your grades stay on this computer until "
        "you sign out."
    ),
    "login_failed": N_("CampusID did not accept the sign-in. Select “Sign in” to start again."),
    "login_in_progress": N_("A sign-in is already waiting in your browser. Finish it there, or cancel it here first."),
    "insufficient_scope": N_(
        "This sign-in does not allow reading your grades. Sign out, then sign in again and allow access to grades."
    ),
    "upstream_error": N_(
        "CampusID answered with an error. Try again later; if it keeps happening, contact the IT service desk."
    ),
}
SESSION_REVOKED = N_(
    "You were signed out: campusid ended this sign-in (you signed out there or in another app, or your account or "
    "this app was disabled). Select “Sign in” to sign in again."
)


def _unexpected(code: str) -> str:
    return N_(
        "Something went wrong (%(code)s). Try again; if it keeps happening, contact the IT service desk.", code=code
    )


def describe_error(error: BaseException, texts: Translator, *, now: datetime | None = None) -> str:
    if isinstance(error, LoginCancelled):
        return texts._("Sign-in cancelled. Select “Sign in” when you are ready.")
    if isinstance(error, SessionRevoked):
        return texts.text(SESSION_REVOKED)
    if not isinstance(error, CoreError):
        return texts.text(_unexpected(type(error).__name__))
    if error.code == "rate_limited":
        if not error.retry_after:
            return texts._("Too many sign-in attempts. Please wait a few minutes and try again.")
        moment = (now or datetime.now().astimezone()) + timedelta(seconds=error.retry_after)
        minutes = max(1, math.ceil(error.retry_after / 60))
        message = N_plural(
            "Too many sign-in attempts. Please wait and try again after %(when)s (in about %(minutes)s minute).",
            "Too many sign-in attempts. Please wait and try again after %(when)s (in about %(minutes)s minutes).",
            minutes,
            when=moment.strftime("%H:%M"),
            minutes=minutes,
        )
        return texts.text(message)
    message = _BY_CODE.get(error.code)
    return texts.text(message) if message else texts.text(_unexpected(error.code))
