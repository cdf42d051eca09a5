"""The bridge operations: one table for the defences, the router and the OpenAPI document."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Auth(enum.Enum):
    NONE = "none"  # /health and the read-only embedded resources
    TOKEN = "token"  # Authorization: Bearer <APP_BRIDGE_TOKEN>
    TOKEN_AND_SCOPE = "token+scope"  # and the session's access token must grant a scope


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    name: str
    auth: Auth
    summary: str
    json_body: bool = False  # accepts an optional JSON body
    scope: str | None = None


OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/health", "health", Auth.NONE, "Liveness; nothing personal."),
    Operation(
        "POST",
        "/login",
        "login",
        Auth.TOKEN,
        "Sign in through the system browser, or with a code entered on another device "
        '(`{"method": "device"}`, RFC 8628); or reuse the session.',
        json_body=True,
    ),
    Operation(
        "POST",
        "/sync_grades",
        "sync_grades",
        Auth.TOKEN,
        "Fetch the grades from the records API into the local cache.",
    ),
    Operation("GET", "/grades", "grades", Auth.TOKEN_AND_SCOPE, "The cached grades, offline.", scope="grades.read"),
    Operation("GET", "/status", "status", Auth.TOKEN, "Session state, last sync, bridge settings."),
    Operation("POST", "/logout", "logout", Auth.TOKEN, "Revoke and forget the tokens."),
    Operation("GET", "/", "index", Auth.NONE, "The status page (HTML)."),
    Operation("GET", "/openapi.json", "openapi", Auth.NONE, "This API's OpenAPI document."),
)

STATIC_PREFIX = "/static/"
STATIC = Operation("GET", STATIC_PREFIX + "{name}", "static", Auth.NONE, "Static files of the status page.")


def operations_at(path: str) -> dict[str, Operation]:
    """The operations by method at ``path`` (HEAD answers wherever GET does); empty for an unknown path."""
    if path.startswith(STATIC_PREFIX):
        found = {"GET": STATIC}
    else:
        found = {op.method: op for op in OPERATIONS if op.path == path}
    if "GET" in found:
        found["HEAD"] = found["GET"]
    return found
