"""Building the authorization request (RFC 6749 section 4.1.1, OpenID Connect Core 1.0 section 3.1.2.1)."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .pkce import make_code_verifier, s256_challenge

# Parameters this module sets itself; a caller's extra parameter may not replace them.
RESERVED_PARAMS = frozenset(
    {
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "nonce",
        "code_challenge",
        "code_challenge_method",
        "code_verifier",
    }
)


@dataclass(frozen=True)
class AuthorizationRequest:
    """One login attempt. Keep it in memory or in the server-side session, never in a URL or a log.

    ``code_verifier`` is excluded from ``repr``: a verifier is never logged or shown.
    """

    url: str
    state: str
    nonce: str
    redirect_uri: str
    code_verifier: str = field(repr=False)
    scope: str
    created_at: datetime


def build_authorization_request(
    authorization_endpoint: str,
    *,
    client_id: str,
    redirect_uri: str,
    scope: str,
    extra_params: Mapping[str, str] | None = None,
) -> AuthorizationRequest:
    """Create a fresh state, nonce and PKCE S256 pair and the URL the browser opens.

    - state: RFC 6749 section 10.12 (CSRF), random per request from ``secrets``.
    - nonce: OpenID Connect Core 1.0 section 3.1.2.1 and 15.5.2 (replay), random per request.
    - code_challenge / S256: RFC 7636 section 4.3; only the challenge goes in the URL.
    """
    extra = dict(extra_params or {})
    clash = RESERVED_PARAMS.intersection(extra)
    if clash:
        raise ValueError(f"these authorization parameters are set by the library: {sorted(clash)}")
    if "openid" not in scope.split():
        raise ValueError("scope must contain 'openid' (OpenID Connect Core 1.0 section 3.1.2.1)")
    state = secrets.token_urlsafe(32)
    nonce = secrets.token_urlsafe(32)
    verifier = make_code_verifier()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": scope,
        "state": state,
        "nonce": nonce,
        "code_challenge": s256_challenge(verifier),
        "code_challenge_method": "S256",
        **{k: str(v) for k, v in extra.items()},
    }
    # RFC 6749 section 3.1: the endpoint URI may carry a query component, which must be retained.
    parts = urlsplit(authorization_endpoint)
    query = parse_qsl(parts.query, keep_blank_values=True) + list(params.items())
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))
    return AuthorizationRequest(
        url=url,
        state=state,
        nonce=nonce,
        redirect_uri=redirect_uri,
        code_verifier=verifier,
        scope=scope,
        created_at=datetime.now(UTC),
    )
