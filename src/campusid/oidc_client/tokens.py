"""Token, refresh, revocation and userinfo requests and responses, as pure functions.

The sync and async clients both build their ``httpx.Request`` objects and read the
``httpx.Response`` objects through this module, so every rule is written once.
"""

from __future__ import annotations

import base64
import email.utils
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote_plus

import httpx

from .errors import TokenEndpointError, UserInfoError

_FORM = "application/x-www-form-urlencoded"
_MAX_DESCRIPTION = 300


@dataclass(frozen=True)
class TokenSet:
    """A token response (RFC 6749 section 5.1) with the validated ID token claims.

    ``repr``/``str`` never show the access, refresh or ID token.
    """

    access_token: str = field(repr=False)
    token_type: str
    expires_in: int | None
    expires_at: datetime | None
    refresh_token: str | None = field(repr=False)
    id_token: str | None = field(repr=False)
    scope: str | None
    id_claims: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        return (
            f"TokenSet(token_type={self.token_type!r}, expires_at={self.expires_at!r}, scope={self.scope!r}, "
            f"refresh_token={'<set>' if self.refresh_token else None}, "
            f"id_token={'<set>' if self.id_token else None}, sub={self.id_claims.get('sub')!r})"
        )

    __str__ = __repr__

    def is_expired(self, skew: float = 30.0, now: datetime | None = None) -> bool:
        """True when the access token expires within ``skew`` seconds (False when the lifetime is unknown)."""
        if self.expires_at is None:
            return False
        return (now or datetime.now(UTC)) + timedelta(seconds=skew) >= self.expires_at


# --- client authentication (RFC 6749 section 2.3.1) -------------------------------------------


def basic_auth_header(client_id: str, client_secret: str) -> str:
    """RFC 6749 section 2.3.1: id and secret are each form-urlencoded (Appendix B, UTF-8), then joined
    by ':' and base64-encoded, so a ':' '+' '%' or non-ASCII character in either survives."""
    pair = f"{quote_plus(client_id, safe='')}:{quote_plus(client_secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode("ascii")).decode("ascii")


def _client_auth(client_id: str, client_secret: str | None, body: dict[str, str]) -> dict[str, str]:
    """client_secret_basic for confidential clients; a public client (RFC 6749 section 2.1, RFC 8252
    section 8.4) identifies itself with ``client_id`` in the body and sends no secret."""
    headers = {"Accept": "application/json", "Content-Type": _FORM}
    if client_secret is not None:
        headers["Authorization"] = basic_auth_header(client_id, client_secret)
    else:
        body["client_id"] = client_id
    return headers


def client_request(url: str, client_id: str, client_secret: str | None, form: dict[str, str]) -> httpx.Request:
    """A form POST to an endpoint where the client authenticates: the token endpoint, the
    revocation endpoint (RFC 7009 section 2.1) and the device authorization endpoint (RFC 8628 3.1)."""
    headers = _client_auth(client_id, client_secret, form)
    return httpx.Request("POST", url, data=form, headers=headers)


def code_exchange_form(code: str, redirect_uri: str, code_verifier: str) -> dict[str, str]:
    """RFC 6749 section 4.1.3 with RFC 7636 section 4.5 (``code_verifier`` in the body only)."""
    return {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": code_verifier,
    }


def refresh_form(refresh_token: str, scope: str | None) -> dict[str, str]:
    """RFC 6749 section 6."""
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    if scope is not None:
        form["scope"] = scope
    return form


def revocation_form(token: str, token_type_hint: str | None) -> dict[str, str]:
    """RFC 7009 section 2.1."""
    form = {"token": token}
    if token_type_hint is not None:
        form["token_type_hint"] = token_type_hint
    return form


def userinfo_request(userinfo_endpoint: str, access_token: str) -> httpx.Request:
    """OpenID Connect Core 1.0 section 5.3.1, Bearer token in the header (RFC 6750 section 2.1)."""
    return httpx.Request(
        "GET",
        userinfo_endpoint,
        headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"},
    )


# --- responses -------------------------------------------------------------------------------


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """RFC 9110 section 10.2.3: delay-seconds or an HTTP-date; ``None`` when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _redact(text: str | None, secrets_: Iterable[str]) -> str | None:
    """Keep provider-supplied text short and free of anything we sent (verifier, code, tokens)."""
    if text is None:
        return None
    text = str(text)[:_MAX_DESCRIPTION]
    for secret in secrets_:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    try:
        doc = response.json()
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def token_endpoint_error(response: httpx.Response, sent_secrets: Iterable[str] = ()) -> TokenEndpointError:
    """RFC 6749 section 5.2 error body; ``retry_after`` from ``Retry-After`` (429 / 503)."""
    doc = _json_object(response) or {}
    error = doc.get("error")
    if not isinstance(error, str) or not error:
        if response.status_code in (429, 503):
            error = "temporarily_unavailable"
        else:
            error = "server_error" if response.status_code >= 500 else "invalid_response"
    description = doc.get("error_description")
    return TokenEndpointError(
        error=error,
        description=_redact(description if isinstance(description, str) else None, sent_secrets),
        status=response.status_code,
        retry_after=parse_retry_after(response.headers.get("Retry-After")),
    )


def parse_token_response(
    response: httpx.Response, *, requested_scope: str | None, sent_secrets: Iterable[str] = ()
) -> TokenSet:
    """RFC 6749 section 5.1. ID token claims are filled in later by the caller after validation."""
    if response.status_code != 200:
        raise token_endpoint_error(response, sent_secrets)
    doc = _json_object(response)
    if doc is None:
        raise TokenEndpointError("invalid_response", "token response is not a JSON object", response.status_code)
    access_token = doc.get("access_token")
    token_type = doc.get("token_type")
    if not isinstance(access_token, str) or not access_token:
        raise TokenEndpointError("invalid_response", "token response lacks access_token", response.status_code)
    if not isinstance(token_type, str) or not token_type:
        raise TokenEndpointError("invalid_response", "token response lacks token_type", response.status_code)
    expires_in = doc.get("expires_in")
    if isinstance(expires_in, str) and expires_in.isdigit():
        expires_in = int(expires_in)
    if isinstance(expires_in, bool) or not isinstance(expires_in, int | float):
        expires_in = None
    expires_at = datetime.now(UTC) + timedelta(seconds=expires_in) if expires_in is not None else None
    refresh_token = doc.get("refresh_token")
    id_token = doc.get("id_token")
    scope = doc.get("scope")
    return TokenSet(
        access_token=access_token,
        token_type=token_type,
        expires_in=int(expires_in) if expires_in is not None else None,
        expires_at=expires_at,
        refresh_token=refresh_token if isinstance(refresh_token, str) and refresh_token else None,
        id_token=id_token if isinstance(id_token, str) and id_token else None,
        # RFC 6749 section 5.1: scope is omitted when it equals the requested one.
        scope=scope if isinstance(scope, str) else requested_scope,
    )


def check_revocation_response(response: httpx.Response, token: str) -> None:
    """RFC 7009 section 2.2: 200 means revoked or already invalid; 2.2.1 errors raise."""
    if response.status_code == 200:
        return
    raise token_endpoint_error(response, (token,))


def parse_userinfo_response(response: httpx.Response, expected_sub: str | None = None) -> dict[str, Any]:
    """OpenID Connect Core 1.0 sections 5.3.2-5.3.4; errors per RFC 6750 section 3 (WWW-Authenticate)."""
    if response.status_code != 200:
        error, description = "invalid_response", None
        challenge = response.headers.get("WWW-Authenticate", "")
        for item in challenge.replace("Bearer", "", 1).split(","):
            key, _, value = item.strip().partition("=")
            if key == "error":
                error = value.strip('"')
            elif key == "error_description":
                description = value.strip('"')[:_MAX_DESCRIPTION]
        raise UserInfoError(error, description, response.status_code)
    if not response.headers.get("Content-Type", "").startswith("application/json"):
        raise UserInfoError("invalid_response", "only JSON userinfo responses are supported", response.status_code)
    doc = _json_object(response)
    if doc is None or not isinstance(doc.get("sub"), str):
        raise UserInfoError("invalid_response", "userinfo is not a JSON object with a sub", response.status_code)
    # Section 5.3.2: the sub in the UserInfo Response MUST be verified to match the ID token's.
    if expected_sub is not None and doc["sub"] != expected_sub:
        raise UserInfoError("invalid_response", "userinfo sub does not match the ID token", response.status_code)
    return doc


def with_claims(tokens: TokenSet, claims: Mapping[str, Any]) -> TokenSet:
    return replace(tokens, id_claims=dict(claims))
