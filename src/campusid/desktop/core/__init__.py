"""Desktop core: session, token storage, refresh, grade sync and local cache. No GUI, no HTTP server."""

from .app import GRADES_SCOPE, DesktopCore, device_prompt_data
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
from .oidc import DevicePrompt, OIDCPort, ProviderInfo, Tokens
from .session import LoginResult, Session, SessionState

__all__ = [
    "GRADES_SCOPE",
    "CoreError",
    "DesktopCore",
    "DevicePrompt",
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
    "device_prompt_data",
]
