"""The relying party's side of single logout.

OpenID Connect RP-Initiated Logout 1.0: :func:`logout_url` builds the request to the provider's
``end_session_endpoint``. OpenID Connect Back-Channel Logout 1.0: :func:`check_logout_token_claims`
checks a logout token's claims (section 2.6, steps 3-6) after its signature has been verified with
the provider's key by ``kid`` (step 2, in the client), and :class:`SeenTokens` remembers the ``jti``
of each accepted token until it expires, so a replayed token is refused (step 7's "MAY", done).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from joserfc import jws
from joserfc.errors import JoseError

from .errors import LogoutTokenError

BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"
LOGOUT_TOKEN_TYPES = (None, "JWT", "logout+jwt")


def logout_url(
    end_session_endpoint: str,
    *,
    id_token_hint: str | None = None,
    client_id: str | None = None,
    post_logout_redirect_uri: str | None = None,
    state: str | None = None,
    ui_locales: str | None = None,
) -> str:
    """The URL to send the browser to (RP-Initiated Logout 1.0 section 2). With a
    post_logout_redirect_uri, the provider must know the client: give the ID token as
    ``id_token_hint`` (recommended: it also spares the user a question) or ``client_id``."""
    if post_logout_redirect_uri is not None and id_token_hint is None and client_id is None:
        raise ValueError("post_logout_redirect_uri needs id_token_hint or client_id (RP-Initiated Logout 1.0 2)")
    params = {
        "id_token_hint": id_token_hint,
        "client_id": client_id,
        "post_logout_redirect_uri": post_logout_redirect_uri,
        "state": state,
        "ui_locales": ui_locales,
    }
    query = urlencode({k: v for k, v in params.items() if v is not None})
    parts = urlsplit(end_session_endpoint)
    joined = f"{parts.query}&{query}" if parts.query and query else (parts.query or query)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, joined, ""))


def jws_header(token: str) -> dict[str, Any]:
    """The protected header of a compact JWS, not yet trusted; ValueError when unreadable."""
    try:
        return dict(jws.extract_compact(token.encode("ascii")).protected)
    except (JoseError, ValueError, UnicodeError):
        raise ValueError("not a compact JWS") from None


def _number(claims: dict[str, Any], name: str) -> float:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LogoutTokenError(f"logout token {name} is missing or not a number")
    return float(value)


def check_logout_token_claims(
    claims: dict[str, Any], *, issuer: str, client_id: str, leeway: float, now: float | None = None
) -> None:
    """Back-Channel Logout 1.0 section 2.6 steps 3-6 (the ID token's iss/aud/iat rules, then the
    logout token's own): iss, aud, iat (and exp when present), an `events` member naming the
    back-channel logout event with a JSON object, a `sub` or a `sid`, and no `nonce`."""
    now = time.time() if now is None else now
    if claims.get("iss") != issuer:
        raise LogoutTokenError("logout token iss is not the configured issuer")
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud
    if not isinstance(audiences, list) or client_id not in audiences:
        raise LogoutTokenError("logout token aud does not contain this client_id")
    if _number(claims, "iat") > now + leeway:
        raise LogoutTokenError("logout token iat is in the future")
    if "exp" in claims and now > _number(claims, "exp") + leeway:
        raise LogoutTokenError("logout token has expired")
    events = claims.get("events")
    if not isinstance(events, dict) or not isinstance(events.get(BACKCHANNEL_EVENT), dict):
        raise LogoutTokenError("logout token has no back-channel logout event")
    sub, sid = claims.get("sub"), claims.get("sid")
    if not (isinstance(sub, str) and sub) and not (isinstance(sid, str) and sid):
        raise LogoutTokenError("logout token names neither sub nor sid")
    if "nonce" in claims:  # section 2.4: so that an ID token cannot pass for a logout token
        raise LogoutTokenError("logout token has a nonce")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti:
        raise LogoutTokenError("logout token has no jti")


class SeenTokens:
    """The `jti` of each accepted logout token, kept until the token expires (bounded; the
    oldest goes first). Thread-safe: a web server may verify two deliveries at once."""

    def __init__(self, size: int = 10000, keep: float = 600) -> None:
        self._size = size
        self._keep = keep
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def first_time(self, jti: str, expires: float | None, now: float) -> bool:
        """True, and remembered, when `jti` was not seen before (or has expired since)."""
        with self._lock:
            for old, until in list(self._seen.items())[:100]:
                if until >= now:
                    break
                del self._seen[old]
            until = self._seen.get(jti)
            if until is not None and until >= now:
                return False
            self._seen[jti] = max(expires or 0, now + self._keep)
            self._seen.move_to_end(jti)
            while len(self._seen) > self._size:
                self._seen.popitem(last=False)
            return True
