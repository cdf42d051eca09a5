"""Typed failures of the desktop core.

Each carries the bridge's stable error ``code`` so the bridge (and the GUI) can report it without
knowing where it came from. Messages never contain a token, a code or a verifier.
"""

from __future__ import annotations


class CoreError(Exception):
    code = "internal_error"

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


class NotLoggedIn(CoreError):
    code = "not_logged_in"


class LoginInProgress(CoreError):
    code = "login_in_progress"


class LoginTimeout(CoreError):
    code = "login_timeout"


class RateLimited(CoreError):
    """The IdP's login frequency limit (docs/configuration.md) was hit; ``retry_after`` says when to retry."""

    code = "rate_limited"


class LoginFailed(CoreError):
    code = "login_failed"


class LoginCancelled(LoginFailed):
    """The person cancelled the sign-in in the app; keeps the bridge's documented ``login_failed`` code."""


class UpstreamError(CoreError):
    code = "upstream_error"


class UpstreamUnavailable(CoreError):
    code = "upstream_unavailable"


class InsufficientScope(CoreError):
    code = "insufficient_scope"


class RefreshRejected(CoreError):
    """The IdP no longer accepts the refresh token (``invalid_grant``): the session is over."""

    code = "not_logged_in"


class SessionRevoked(RefreshRejected):
    """The refresh token was refused because the sign-in ended at campusid (signed out there or in
    another app, the account or the app disabled): the app has signed itself out."""
