"""OAuth 2.0 / OIDC errors as exceptions carrying what the response needs (RFC 6749 4.1.2.1, 5.2)."""

from __future__ import annotations

import re

# RFC 6749 5.2 and 4.1.2.1, RFC 6750 3: error_description is NQSCHAR only, %x20-21 / %x23-5B / %x5D-7E.
_NOT_NQSCHAR = re.compile(r"[^\x20\x21\x23-\x5b\x5d-\x7e]")
DESCRIPTION_MAX = 200


def description_text(text: str) -> str:
    """An error description as RFC 6749 5.2 allows it (printable ASCII without '"' and '\\'),
    each other character '?', at most DESCRIPTION_MAX characters. A description may quote what
    the request sent, which is anyone's bytes; in a header (RFC 6750 3's WWW-Authenticate) a
    non-ASCII byte or a quote would break the header or be read as a new parameter."""
    return _NOT_NQSCHAR.sub("?", text[:DESCRIPTION_MAX])


class OAuthError(Exception):
    """An error the protocol defines; one place turns it into a response."""

    status = 400
    error = "invalid_request"

    def __init__(self, description: str = "", *, error: str | None = None, status: int | None = None) -> None:
        super().__init__(description)
        self.description = description_text(description)
        if error is not None:
            self.error = error
        if status is not None:
            self.status = status

    def body(self) -> dict:
        out = {"error": self.error}
        if self.description:
            out["error_description"] = self.description
        return out


class InvalidRequest(OAuthError):
    error = "invalid_request"


class InvalidClient(OAuthError):
    """RFC 6749 5.2: 401 with WWW-Authenticate when the client tried HTTP authentication."""

    error = "invalid_client"
    status = 401


class InvalidGrant(OAuthError):
    error = "invalid_grant"


class UnauthorizedClient(OAuthError):
    error = "unauthorized_client"


class UnsupportedGrantType(OAuthError):
    error = "unsupported_grant_type"


class InvalidScope(OAuthError):
    error = "invalid_scope"


class UnsupportedResponseType(OAuthError):
    error = "unsupported_response_type"


class AccessDenied(OAuthError):
    error = "access_denied"


class LoginRequired(OAuthError):
    error = "login_required"


class ConsentRequired(OAuthError):
    error = "consent_required"


class TemporarilyUnavailable(OAuthError):
    error = "temporarily_unavailable"
    status = 503

    def __init__(self, description: str = "", retry_after: int | None = None) -> None:
        super().__init__(description)
        self.retry_after = retry_after


class SlowDown(OAuthError):
    """Token endpoint rate limit: 429 with Retry-After (RFC 6585 section 4)."""

    error = "slow_down"
    status = 429

    def __init__(self, description: str = "", retry_after: int = 60) -> None:
        super().__init__(description)
        self.retry_after = retry_after


class AuthorizationPending(OAuthError):
    """RFC 8628 3.5: the person has not yet approved or denied the device's request."""

    error = "authorization_pending"


class PollingTooFast(OAuthError):
    """RFC 8628 3.5 `slow_down`: still pending, and the device polled before its interval was up;
    the interval is now longer. 400, unlike the rate limit's 429 SlowDown."""

    error = "slow_down"

    def __init__(self, description: str, interval: int) -> None:
        super().__init__(description)
        self.interval = interval


class ExpiredToken(OAuthError):
    """RFC 8628 3.5: the device code expired before it was redeemed; start a new request."""

    error = "expired_token"


class InvalidToken(OAuthError):
    """RFC 6750 3.1."""

    error = "invalid_token"
    status = 401


class InsufficientScope(OAuthError):
    error = "insufficient_scope"
    status = 403


class BadAuthorizationRequest(Exception):
    """The client or redirect_uri cannot be trusted: show the HTML 400 page, never redirect
    (RFC 6749 section 4.1.2.1)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
