"""OAuth 2.0 / OIDC errors as exceptions carrying what the response needs: the status, the code,
and the headers (RFC 6749 4.1.2.1 and 5.2, RFC 6750 3, RFC 8628 3.5)."""

from __future__ import annotations

from campusid.idp.errors import RequestError


class OAuthError(RequestError):
    """An error OAuth 2.0 or OpenID Connect defines (`error` is its code); see idp/errors.py."""


class InvalidRequest(OAuthError):
    error = "invalid_request"


class InvalidClient(OAuthError):
    """RFC 6749 5.2: 401 with a Basic challenge (the only way a client authenticates here)."""

    error = "invalid_client"
    status = 401

    def challenge(self) -> str:
        return 'Basic realm="campusid", charset="UTF-8"'


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


class AuthorizationPending(OAuthError):
    """RFC 8628 3.5: the person has not yet approved or denied the device's request."""

    error = "authorization_pending"


class PollingTooFast(OAuthError):
    """RFC 8628 3.5 `slow_down`: still pending, and the device polled before its interval was up;
    the interval is now longer. 400, unlike the rate limit's 429 (idp/errors.py TooManyRequests)."""

    error = "slow_down"

    def __init__(self, description: str, interval: int) -> None:
        super().__init__(description)
        self.interval = interval


class ExpiredToken(OAuthError):
    """RFC 8628 3.5: the device code expired before it was redeemed; start a new request."""

    error = "expired_token"


class BearerError(OAuthError):
    """RFC 6750 3: refused at a resource, with a Bearer challenge naming the error."""

    def challenge(self) -> str:
        value = f'Bearer realm="campusid", error="{self.error}"'
        if self.description:
            value += f', error_description="{self.description}"'
        return value


class InvalidToken(BearerError):
    """RFC 6750 3.1."""

    error = "invalid_token"
    status = 401


class MissingToken(InvalidToken):
    """RFC 6750 3.1: a request with no token gets the challenge without an error code."""

    def __init__(self) -> None:
        super().__init__("no access token")

    def challenge(self) -> str:
        return 'Bearer realm="campusid"'


def at_resource(exc: RequestError) -> BearerError:
    """RFC 6750 3: a protected resource answers every refusal with a Bearer challenge (a malformed
    request is `invalid_request` there, 400)."""
    if isinstance(exc, BearerError):
        return exc
    return BearerError(exc.description, error=exc.error, status=exc.status, retry_after=exc.retry_after)


class InsufficientScope(BearerError):
    error = "insufficient_scope"
    status = 403


class BadAuthorizationRequest(RequestError):
    """The client or redirect_uri cannot be trusted: show the HTML 400 page, never redirect
    (RFC 6749 section 4.1.2.1). `message` is the page's text, as written."""
