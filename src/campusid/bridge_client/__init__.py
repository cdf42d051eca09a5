"""Python SDK for the campusid desktop bridge (scripts and chat bots).

from campusid.bridge_client import BridgeClient, NotLoggedIn

with BridgeClient() as bridge:          # http://127.0.0.1:4399, token from $APP_BRIDGE_TOKEN
    bridge.login()                      # reuses the session; opens the browser only when needed
    report = bridge.sync_grades()

Without a browser on the machine (a bot on a server, an SSH session):

    started = bridge.device_login()
    if started.pending:
        print(started.device.message())  # "To sign in, open https://…/device and enter the code BCDF-GHJK …"
        bridge.wait_for_login()
"""

from .async_client import AsyncBridgeClient
from .client import BridgeClient
from .errors import (
    BadHost,
    BridgeError,
    BridgeUnavailable,
    ForbiddenOrigin,
    InsufficientScope,
    InvalidRequest,
    LoginFailed,
    LoginInProgress,
    LoginTimeout,
    MethodNotAllowed,
    NotFound,
    NotLoggedIn,
    PayloadTooLarge,
    ProtocolError,
    RateLimited,
    Unauthorized,
    UnsupportedMediaType,
    UpstreamError,
    UpstreamUnavailable,
)
from .models import DeviceLogin, Grade, GradeReport, Health, LoginResult

__all__ = [
    "AsyncBridgeClient",
    "BadHost",
    "BridgeClient",
    "BridgeError",
    "BridgeUnavailable",
    "DeviceLogin",
    "ForbiddenOrigin",
    "Grade",
    "GradeReport",
    "Health",
    "InsufficientScope",
    "InvalidRequest",
    "LoginFailed",
    "LoginInProgress",
    "LoginResult",
    "LoginTimeout",
    "MethodNotAllowed",
    "NotFound",
    "NotLoggedIn",
    "PayloadTooLarge",
    "ProtocolError",
    "RateLimited",
    "Unauthorized",
    "UnsupportedMediaType",
    "UpstreamError",
    "UpstreamUnavailable",
]
