"""campusid relying-party (OpenID Connect client) library on httpx, sync and async.

Authorization Code flow with PKCE S256 (RFC 6749, RFC 7636, OpenID Connect Core 1.0), issuer
identification (RFC 9207), token revocation (RFC 7009) and a loopback redirect receiver for
native apps (RFC 8252).
"""

from .authorization import AuthorizationRequest
from .client import AsyncOIDCClient, OIDCClient
from .discovery import ProviderMetadata
from .errors import (
    AuthorizationErrorResponse,
    CallbackError,
    DiscoveryError,
    IDTokenError,
    IssuerMismatchError,
    LoginTimeoutError,
    OIDCError,
    StateMismatchError,
    TokenEndpointError,
    UserInfoError,
)
from .issuer import canonical_issuer
from .loopback import LoopbackReceiver
from .tokens import TokenSet

__all__ = [
    "AsyncOIDCClient",
    "AuthorizationErrorResponse",
    "AuthorizationRequest",
    "CallbackError",
    "DiscoveryError",
    "IDTokenError",
    "IssuerMismatchError",
    "LoginTimeoutError",
    "LoopbackReceiver",
    "OIDCClient",
    "OIDCError",
    "ProviderMetadata",
    "StateMismatchError",
    "TokenEndpointError",
    "TokenSet",
    "UserInfoError",
    "canonical_issuer",
]
