"""Redirect URIs: registration rules (RFC 8252 7.1, 7.3; RFC 9700 2.1) and request matching (exact
string comparison, RFC 9700 2.1, with any port on a loopback URI, RFC 8252 7.3)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from campusid.i18n import N_
from campusid.idp.issuer import is_loopback_host

_LOOPBACK_LITERALS = ("127.0.0.1", "::1")
_PRIVATE_SCHEME = re.compile(r"^[a-z][a-z0-9+\-]*(\.[a-z0-9+\-]+)+$")


def _split(uri: str):
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return None
    return parts


def registration_problem(uri: str, client_type: str) -> str | None:
    """Why `uri` cannot be registered for this client type, or None when it can."""
    if not uri or len(uri) > 2000 or any(c.isspace() for c in uri) or not uri.isprintable():
        return N_("must be a non-empty URI without spaces or control characters, at most 2000 characters")
    parts = _split(uri)
    if parts is None or not parts.scheme:
        return N_("is not an absolute URI")
    if parts.fragment or "#" in uri:
        return N_("must not contain a fragment (#…) (RFC 6749 3.1.2)")
    if "*" in uri:
        return N_("must not contain wildcards")
    if parts.username or parts.password:
        return N_("must not contain user information")
    scheme = parts.scheme.lower()
    if client_type == "web":
        if scheme == "https" and parts.hostname:
            return None
        if scheme == "http" and parts.hostname and is_loopback_host(parts.hostname):
            return None
        return N_("for a web app must use https (http only on a loopback host)")
    if scheme == "http":
        if parts.hostname in _LOOPBACK_LITERALS:
            return None
        return N_(
            "for a native app must use a loopback IP literal (http://127.0.0.1/… or http://[::1]/…), "
            "not localhost or another host (RFC 8252 8.3)"
        )
    if scheme == "https":
        return N_("for a native app must be a private-use scheme or a loopback address")
    if not _PRIVATE_SCHEME.match(scheme):
        return N_(
            "for a native app must use a private-use scheme in reverse-domain form, "
            "e.g. edu.example.app:/callback (RFC 8252 7.1)"
        )
    return None


def _without_port(parts) -> str:
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{host}{parts.path}{query}"


def _is_loopback_literal(parts) -> bool:
    return parts is not None and parts.scheme == "http" and parts.hostname in _LOOPBACK_LITERALS


def matches_registered(requested: str, registered: list[str], client_type: str) -> bool:
    """Character-for-character match, except that a native client's loopback port is ignored.

    RFC 8252 7.3: the authorization server MUST allow any port for loopback IP redirect URIs
    of native clients. Nothing else is relaxed: `[::1]` does not match a registered
    `127.0.0.1`, and `localhost` is never treated as loopback.
    """
    if requested in registered:
        return True
    if client_type != "native" or "://" not in requested:
        return False
    req = _split(requested)
    if not _is_loopback_literal(req) or req.fragment or req.username or req.password:
        return False
    if f"{req.scheme}://{'[' + req.hostname + ']' if ':' in req.hostname else req.hostname}" not in requested:
        return False  # e.g. upper-case or otherwise non-canonical spellings
    wanted = _without_port(req)
    for uri in registered:
        reg = _split(uri)
        if _is_loopback_literal(reg) and _without_port(reg) == wanted:
            return True
    return False
