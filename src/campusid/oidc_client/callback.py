"""Checking the authorization response (RFC 6749 section 4.1.2, RFC 9207).

Order of checks, strictest first, so that nothing an attacker injects is trusted before the
response is known to answer *our* request at *our* provider:

1. ``state`` equals the one sent, compared in constant time (RFC 6749 section 10.12) -> StateMismatchError
2. ``iss`` equals the canonical issuer, and is required when the provider advertises
   ``authorization_response_iss_parameter_supported`` (RFC 9207 section 2.4) -> IssuerMismatchError
3. an ``error`` response (RFC 6749 section 4.1.2.1) -> AuthorizationErrorResponse
4. a ``code`` is present -> CallbackError otherwise
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .authorization import AuthorizationRequest
from .errors import AuthorizationErrorResponse, CallbackError, IssuerMismatchError, StateMismatchError


def parse_callback(callback: str | Mapping[str, Any]) -> dict[str, str]:
    """Turn a callback URL or a mapping of query parameters into a dict of single values.

    RFC 6749 section 3.1: request and response parameters MUST NOT be included more than once;
    a repeated parameter makes the whole response invalid.
    """
    if isinstance(callback, str):
        pairs = parse_qsl(urlsplit(callback).query, keep_blank_values=True)
    elif isinstance(callback, Mapping):
        pairs = []
        for key, value in callback.items():
            if isinstance(value, list | tuple):
                pairs.extend((key, v) for v in value)
            else:
                pairs.append((key, value))
    else:
        raise TypeError("callback must be a URL string or a mapping of query parameters")
    params: dict[str, str] = {}
    for key, value in pairs:
        if key in params:
            raise CallbackError(f"callback parameter {key!r} appears more than once")
        if not isinstance(value, str):
            raise CallbackError(f"callback parameter {key!r} is not a string")
        params[key] = value
    return params


def states_equal(expected: str, received: str | None) -> bool:
    """Constant-time comparison of two state values (RFC 6749 section 10.12)."""
    if received is None:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), received.encode("utf-8"))


def check_state(req: AuthorizationRequest, params: Mapping[str, str]) -> None:
    if not states_equal(req.state, params.get("state")):
        raise StateMismatchError("the callback state does not match this login; start a new login")


def check_iss(params: Mapping[str, str], canonical_issuer: str, *, required: bool) -> None:
    """RFC 9207 section 2.4: compare ``iss`` with the expected issuer by simple string comparison."""
    iss = params.get("iss")
    if iss is None:
        if required:
            raise IssuerMismatchError("the provider announces the iss parameter but the callback lacks it")
        return
    if not hmac.compare_digest(iss.encode("utf-8"), canonical_issuer.encode("utf-8")):
        raise IssuerMismatchError("the callback iss parameter is not the configured issuer")


def check_callback(
    req: AuthorizationRequest,
    params: Mapping[str, str],
    canonical_issuer: str,
    *,
    iss_required: bool,
) -> str:
    """Run the checks in the order of the module docstring and return the authorization code."""
    check_state(req, params)
    check_iss(params, canonical_issuer, required=iss_required)
    if "error" in params:
        raise AuthorizationErrorResponse(params["error"], params.get("error_description"))
    code = params.get("code")
    if not code:
        raise CallbackError("the callback carries neither a code nor an error")
    return code
