"""The bridge's OpenAPI 3.1 document, built from the operation table and the error table."""

from __future__ import annotations

from typing import Any

from .envelope import API_VERSION, ERROR_STATUS
from .operations import OPERATIONS, STATIC, Auth, Operation

TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"

ERROR_MEANING = {
    "unauthorized": "the bridge token is missing or wrong (send Authorization: Bearer <APP_BRIDGE_TOKEN>)",
    "forbidden_origin": "the request came from a web page (Origin or Sec-Fetch-Site cross-site/same-site)",
    "insufficient_scope": "the session's access token does not grant the scope this operation needs",
    "not_found": "no such path (with or without a token)",
    "method_not_allowed": "the path exists but not with this method (OPTIONS included); see Allow",
    "login_timeout": "nobody finished the browser sign-in in time (or approved the device code before it expired)",
    "login_in_progress": "a sign-in is already waiting for the browser",
    "not_logged_in": "no session (and, for /grades, nothing cached either)",
    "payload_too_large": "the request body is larger than 64 KiB",
    "unsupported_media_type": "the request body is not JSON",
    "bad_host": "the Host header is not 127.0.0.1:PORT or localhost:PORT (DNS rebinding defence)",
    "invalid_request": "malformed JSON, or a body that does not validate",
    "rate_limited": "the bridge's failed-token throttle, or the IdP's login frequency limit; see Retry-After",
    "login_failed": "the identity provider answered the sign-in with an error (or the device sign-in was denied)",
    "upstream_error": "the identity provider or the records API answered unexpectedly",
    "upstream_unavailable": "the identity provider or the records API is unreachable",
    "internal_error": "a bug in the bridge",
}

_TIMESTAMP = {"type": "string", "format": "date-time", "pattern": TIME_PATTERN}
_NULLABLE_TIMESTAMP = {"oneOf": [{"type": "null"}, _TIMESTAMP]}
_USER = {"type": "object", "required": ["name"], "properties": {"name": {"type": ["string", "null"]}}}

SCHEMAS: dict[str, Any] = {
    "ErrorCode": {
        "type": "string",
        "enum": sorted(ERROR_STATUS),
        "description": "Stable lower_snake_case codes.",
    },
    "Error": {
        "type": "object",
        "required": ["code", "message"],
        "additionalProperties": False,
        "properties": {"code": {"$ref": "#/components/schemas/ErrorCode"}, "message": {"type": "string"}},
    },
    "ApiResponse": {
        "description": "The envelope of every bridge API response, errors and 404s included.",
        "type": "object",
        "required": ["success", "data", "error", "time"],
        "additionalProperties": False,
        "properties": {
            "success": {"type": "boolean"},
            "data": {},
            "error": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Error"}]},
            "time": _TIMESTAMP,
        },
        "oneOf": [
            {"properties": {"success": {"const": True}, "error": {"type": "null"}}},
            {
                "properties": {
                    "success": {"const": False},
                    "data": {"type": "null"},
                    "error": {"$ref": "#/components/schemas/Error"},
                }
            },
        ],
    },
    "Grade": {
        "type": "object",
        "description": "One course, exactly as the records API gives it.",
        "required": ["course_code"],
        "properties": {
            "course_code": {"type": "string"},
            "course_name": {"type": "string"},
            "term": {"type": "string"},
            "credits": {"type": "number"},
            "score": {"type": ["number", "null"]},
            "grade_point": {"type": ["number", "null"]},
        },
    },
    "GradesData": {
        "type": "object",
        "required": ["grades", "synced_at"],
        "properties": {
            "grades": {"type": "array", "items": {"$ref": "#/components/schemas/Grade"}},
            "synced_at": _NULLABLE_TIMESTAMP,
        },
    },
    "HealthData": {
        "type": "object",
        "required": ["status", "api_version", "logged_in"],
        "additionalProperties": False,
        "properties": {
            "status": {"const": "ok"},
            "api_version": {"type": "string"},
            "logged_in": {"type": "boolean"},
        },
    },
    "LoginRequest": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "force": {
                "type": "boolean",
                "default": False,
                "description": "open the browser even with a session",
            },
            "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 3600, "default": 300},
            "wait": {"type": "boolean", "default": True, "description": "false: answer 202 and poll /status"},
            "method": {
                "enum": ["browser", "device"],
                "default": "browser",
                "description": "device: sign in without a browser on this machine (RFC 8628). The answer is 202 "
                "with a user code for the person to enter at verification_uri on a phone or computer; "
                "/status shows the sign-in finish (state signed_in, or last_login_error). `timeout` and "
                "`wait` do not apply: the code's own lifetime bounds it.",
            },
        },
    },
    "DeviceLoginPending": {
        "type": "object",
        "required": ["pending", "method", "state", "status_url", "verification_uri", "user_code", "expires_at"],
        "properties": {
            "pending": {"const": True},
            "method": {"const": "device"},
            "state": {"const": "waiting_for_device"},
            "status_url": {"type": "string"},
            "verification_uri": {"type": "string", "format": "uri"},
            "verification_uri_complete": {"type": ["string", "null"]},
            "user_code": {"type": "string", "description": "show it to the person, as it is (XXXX-XXXX)"},
            "expires_at": _TIMESTAMP,
        },
    },
    "LoginData": {
        "type": "object",
        "required": ["user", "expires_at", "reused"],
        "properties": {"user": _USER, "expires_at": _TIMESTAMP, "reused": {"type": "boolean"}},
    },
    "LoginPending": {
        "type": "object",
        "required": ["pending", "state", "status_url"],
        "properties": {
            "pending": {"const": True},
            "state": {"type": "string"},
            "status_url": {"type": "string"},
        },
    },
    "StatusData": {
        "type": "object",
        "required": ["state", "user", "expires_at", "last_sync", "courses_cached", "login_pending", "bridge"],
        "properties": {
            "state": {"enum": ["signed_out", "waiting_for_browser", "waiting_for_device", "signed_in"]},
            "user": {"oneOf": [{"type": "null"}, _USER]},
            "expires_at": _NULLABLE_TIMESTAMP,
            "last_sync": _NULLABLE_TIMESTAMP,
            "courses_cached": {"type": "integer"},
            "login_pending": {"type": "boolean"},
            "token_storage": {"type": "object"},
            "bridge": {"type": "object", "description": "host, port, api_version, limits; never the token"},
            "device_login": {
                "description": "while a device sign-in waits: what to show the person",
                "oneOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "required": ["verification_uri", "user_code", "expires_at"],
                        "properties": {
                            "verification_uri": {"type": "string"},
                            "verification_uri_complete": {"type": ["string", "null"]},
                            "user_code": {"type": "string"},
                            "expires_at": _TIMESTAMP,
                        },
                    },
                ],
            },
            "last_login_error": {
                "description": "why the last sign-in failed, until the next one starts",
                "oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Error"}],
            },
            "signed_out_reason": {
                "description": "set (code `session_revoked`) when the app signed itself out because "
                "campusid refused its refresh token: the sign-in ended there (OpenID Connect "
                "Back-Channel Logout 1.0); null otherwise, and again after the next sign-in",
                "oneOf": [
                    {"type": "null"},
                    {
                        "type": "object",
                        "required": ["code", "message"],
                        "additionalProperties": False,
                        "properties": {"code": {"const": "session_revoked"}, "message": {"type": "string"}},
                    },
                ],
            },
        },
    },
    "LogoutData": {
        "type": "object",
        "required": ["state", "revoked"],
        "properties": {"state": {"const": "signed_out"}, "revoked": {"type": "boolean"}},
    },
}

_DATA_SCHEMA = {
    "health": "HealthData",
    "login": "LoginData",
    "sync_grades": "GradesData",
    "grades": "GradesData",
    "status": "StatusData",
    "logout": "LogoutData",
}

_GUARD_ERRORS = [
    "bad_host",
    "forbidden_origin",
    "method_not_allowed",
    "payload_too_large",
    "unsupported_media_type",
]
_TOKEN_ERRORS = ["unauthorized", "rate_limited"]
_OPERATION_ERRORS = {
    "login": [
        "invalid_request",
        "login_in_progress",
        "login_timeout",
        "rate_limited",
        "login_failed",
        "upstream_error",
        "upstream_unavailable",
    ],
    "sync_grades": [
        "invalid_request",
        "not_logged_in",
        "insufficient_scope",
        "rate_limited",
        "upstream_error",
        "upstream_unavailable",
    ],
    "grades": ["insufficient_scope", "not_logged_in", "upstream_unavailable"],
    "status": [],
    "logout": [],
    "static": ["not_found"],
}


def _envelope_with(data_schema: str) -> dict[str, Any]:
    return {
        "allOf": [
            {"$ref": "#/components/schemas/ApiResponse"},
            {"properties": {"data": {"$ref": f"#/components/schemas/{data_schema}"}}},
        ]
    }


def _error_responses(codes: list[str]) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for code in codes:
        by_status.setdefault(ERROR_STATUS[code], []).append(code)
    return {
        str(status): {
            "description": "; ".join(f"`{c}`: {ERROR_MEANING[c]}" for c in sorted(set(names))),
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ApiResponse"}}},
        }
        for status, names in sorted(by_status.items())
    }


def _operation(op: Operation) -> dict[str, Any]:
    doc: dict[str, Any] = {"operationId": op.name, "summary": op.summary}
    codes = list(_GUARD_ERRORS)
    if op.auth is not Auth.NONE:
        doc["security"] = [{"bridgeToken": []}]
        codes += _TOKEN_ERRORS
    if op.scope:
        doc["x-required-scope"] = op.scope
        doc["description"] = f"Also needs the session's IdP access token (ES256 JWT) to grant `{op.scope}`."
    codes += _OPERATION_ERRORS.get(op.name, [])
    if op.name in _DATA_SCHEMA:
        ok = {
            "description": "success",
            "content": {"application/json": {"schema": _envelope_with(_DATA_SCHEMA[op.name])}},
        }
    elif op.name == "openapi":
        ok = {"description": "this document", "content": {"application/json": {}}}
    else:
        ok = {"description": "embedded resource", "content": {"text/html": {}}}
    doc["responses"] = {"200": ok, **_error_responses(codes)}
    if op is STATIC:
        doc["parameters"] = [
            {
                "name": "name",
                "in": "path",
                "required": True,
                "description": "a file of the status page, e.g. `app.js`; any other name answers 404 `not_found`",
                "schema": {"type": "string"},
            }
        ]
    if op.name == "login":
        doc["requestBody"] = {
            "required": False,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/LoginRequest"}}},
        }
        doc["responses"]["202"] = {
            "description": "sign-in started: `LoginPending` (wait: false), or `DeviceLoginPending` "
            "(method: device) with the user code to show; poll /status",
            "content": {
                "application/json": {
                    "schema": {
                        "allOf": [
                            {"$ref": "#/components/schemas/ApiResponse"},
                            {
                                "properties": {
                                    "data": {
                                        "anyOf": [
                                            {"$ref": "#/components/schemas/DeviceLoginPending"},
                                            {"$ref": "#/components/schemas/LoginPending"},
                                        ]
                                    }
                                }
                            },
                        ]
                    }
                }
            },
        }
    return doc


def build_openapi() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for op in (*OPERATIONS, STATIC):
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    table = "\n".join(f"| {ERROR_STATUS[c]} | `{c}` | {ERROR_MEANING[c]} |" for c in sorted(ERROR_STATUS))
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "campusid desktop bridge",
            "version": API_VERSION,
            "description": "Local automation bridge on 127.0.0.1. Every API response is an `ApiResponse` "
            "envelope; unknown paths answer 404 `not_found`, OPTIONS answers 405.\n\n"
            "| status | error.code | meaning |\n|---|---|---|\n" + table,
        },
        "servers": [{"url": "http://127.0.0.1:4399"}],
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "bridgeToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "the value of APP_BRIDGE_TOKEN",
                }
            },
        },
        "x-error-codes": {c: {"status": ERROR_STATUS[c], "meaning": ERROR_MEANING[c]} for c in sorted(ERROR_STATUS)},
    }
