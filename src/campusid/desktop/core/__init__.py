"""Desktop core: session, token storage, refresh, grade sync and local cache. No GUI, no HTTP server."""

from .app import GRADES_SCOPE, DesktopCore
from .cache import GradeCache, GradeSnapshot
from .errors import (
    CoreError,
    InsufficientScope,
    LoginFailed,
    LoginInProgress,
    LoginTimeout,
    NotLoggedIn,
    RateLimited,
    UpstreamError,
    UpstreamUnavailable,
)
from .events import Event, EventBus
from .oidc import OIDCPort, ProviderInfo, Tokens
from .session import LoginResult, Session, SessionState

__all__ = [
    "GRADES_SCOPE",
    "CoreError",
    "DesktopCore",
    "Event",
    "EventBus",
    "GradeCache",
    "GradeSnapshot",
    "InsufficientScope",
    "LoginFailed",
    "LoginInProgress",
    "LoginResult",
    "LoginTimeout",
    "NotLoggedIn",
    "OIDCPort",
    "ProviderInfo",
    "RateLimited",
    "Session",
    "SessionState",
    "Tokens",
    "UpstreamError",
    "UpstreamUnavailable",
]
