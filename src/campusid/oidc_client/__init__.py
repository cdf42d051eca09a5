"""campusid relying-party (OpenID Connect client) library on httpx, sync and async.

Authorization Code flow with PKCE S256 (RFC 6749, RFC 7636, OpenID Connect Core 1.0), issuer
identification (RFC 9207), token revocation (RFC 7009), a loopback redirect receiver for
native apps (RFC 8252), and the device authorization grant for machines without a browser
(RFC 8628: ``device_login()``), and single logout: ``logout_url()`` (OpenID Connect RP-Initiated
Logout 1.0) and ``validate_logout_token()`` (Back-Channel Logout 1.0).
"""

from .authorization import AuthorizationRequest
from .client import AsyncOIDCClient, OIDCClient, print_device_code
from .device import DeviceAuthorization
from .discovery import ProviderMetadata
from .errors import (
    AuthorizationErrorResponse,
    CallbackError,
    DeviceAccessDeniedError,
    DeviceCodeExpiredError,
    DiscoveryError,
    IDTokenError,
    IssuerMismatchError,
    LoginTimeoutError,
    LogoutTokenError,
    OIDCError,
    StateMismatchError,
    TokenEndpointError,
    UserInfoError,
)
from .issuer import canonical_issuer
from .logout import logout_url
from .loopback import LoopbackReceiver
from .tokens import TokenSet

__all__ = [
    "AsyncOIDCClient",
    "AuthorizationErrorResponse",
    "AuthorizationRequest",
    "CallbackError",
    "DeviceAccessDeniedError",
    "DeviceAuthorization",
    "DeviceCodeExpiredError",
    "DiscoveryError",
    "IDTokenError",
    "IssuerMismatchError",
    "LoginTimeoutError",
    "LogoutTokenError",
    "LoopbackReceiver",
    "OIDCClient",
    "OIDCError",
    "ProviderMetadata",
    "StateMismatchError",
    "TokenEndpointError",
    "TokenSet",
    "UserInfoError",
    "canonical_issuer",
    "logout_url",
    "print_device_code",
]
