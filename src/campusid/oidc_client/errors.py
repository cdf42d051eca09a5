"""Typed errors of the relying-party library.

Every failure of a login is a typed exception; the caller starts a new login and never retries
the same authorization code (a code is single use: RFC 6749 section 4.1.2).
No message ever contains a code_verifier, a code or a token.
"""

from __future__ import annotations


class OIDCError(Exception):
    """Base class of every error raised by :mod:`campusid.oidc_client`."""


class DiscoveryError(OIDCError):
    """The provider metadata could not be fetched or is not acceptable.

    OpenID Connect Discovery 1.0 section 4, RFC 8414 section 3.3.
    """


class CallbackError(OIDCError):
    """The authorization response (the redirect back to the client) is unusable (RFC 6749 section 4.1.2)."""


class StateMismatchError(CallbackError):
    """The ``state`` of the callback is missing or is not the one sent (RFC 6749 section 10.12, CSRF)."""


class IssuerMismatchError(CallbackError):
    """The ``iss`` authorization response parameter is missing or wrong (RFC 9207 section 2.4, mix-up)."""


class AuthorizationErrorResponse(CallbackError):
    """The provider redirected back with an error (RFC 6749 section 4.1.2.1)."""

    def __init__(self, error: str, description: str | None = None) -> None:
        self.error = error
        self.description = description
        super().__init__(f"authorization failed: {error}" + (f" ({description})" if description else ""))


class TokenEndpointError(OIDCError):
    """The token (or revocation) endpoint answered with an error.

    RFC 6749 section 5.2, RFC 7009 section 2.2.1. ``retry_after`` is the number of seconds of a
    ``Retry-After`` header (RFC 9110 section 10.2.3), set when the provider rate-limits (429) or is
    unavailable (503). ``status`` is ``None`` when no HTTP answer arrived.
    """

    def __init__(
        self,
        error: str,
        description: str | None = None,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.error = error
        self.description = description
        self.status = status
        self.retry_after = retry_after
        text = f"token endpoint error: {error}"
        if description:
            text += f" ({description})"
        if status is not None:
            text += f" [HTTP {status}]"
        if retry_after is not None:
            text += f", retry after {retry_after:g} s"
        super().__init__(text)


class DeviceAccessDeniedError(TokenEndpointError):
    """The person denied the device's sign-in (RFC 8628 section 3.5 ``access_denied``)."""


class DeviceCodeExpiredError(TokenEndpointError):
    """The device code expired before the person approved it (RFC 8628 section 3.5
    ``expired_token``); ``status`` is ``None`` when the client stopped polling at the expiry
    itself. Start a new device login."""


class UserInfoError(OIDCError):
    """The userinfo endpoint refused the request (OIDC Core 1.0 section 5.3.3, RFC 6750 section 3)."""

    def __init__(self, error: str, description: str | None = None, status: int | None = None) -> None:
        self.error = error
        self.description = description
        self.status = status
        super().__init__(f"userinfo error: {error}" + (f" ({description})" if description else ""))


class IDTokenError(OIDCError):
    """The ID token failed validation (OpenID Connect Core 1.0 section 3.1.3.7)."""


class LoginTimeoutError(OIDCError):
    """Nobody completed the browser login before the loopback receiver's timeout (RFC 8252 section 7.3)."""


class LogoutTokenError(OIDCError):
    """A back-channel logout token is not acceptable (OpenID Connect Back-Channel Logout 1.0 2.6);
    the relying party answers 400 and ends no session."""
