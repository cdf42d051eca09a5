"""The canonical ASCII issuer identifier.

SPEC 2.1: protocol checks use only the canonical ASCII issuer; an internationalised form of the
domain is for display. DESIGN 3.1: the canonical issuer is the ASCII (punycode, IDNA 2008 / UTS 46)
form, lower-case host, no trailing slash, no query or fragment (RFC 8414 section 2), https except
for loopback hosts (RFC 8252 section 8.3, OpenID Connect Discovery 1.0 section 3).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

import idna

_DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback_host(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ascii_host(host: str) -> str:
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if host.isascii():
        # Already-ASCII hosts (including xn-- labels) are kept, lower-cased.
        return host.lower()
    try:
        return idna.encode(host, uts46=True).decode("ascii").lower()
    except idna.IDNAError as exc:
        raise ValueError(f"issuer host is not a valid internationalised domain name: {exc}") from None


def canonical_issuer(issuer: str) -> str:
    """Return the canonical ASCII form of a configured issuer URL, or raise ``ValueError``.

    Only the *configured* value is canonicalised. Values received from the network (metadata
    ``issuer``, ``iss`` parameter, ``iss`` claim) are compared with the result character for
    character (OpenID Connect Discovery 1.0 section 4.3, RFC 9207 section 2.4).
    """
    parts = urlsplit(issuer.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError("issuer must be an absolute http(s) URL")
    if parts.query or parts.fragment or "?" in issuer or "#" in issuer:
        raise ValueError("issuer must not have a query or a fragment (RFC 8414 section 2)")
    if parts.username is not None or parts.password is not None:
        raise ValueError("issuer must not carry user information")
    host = _ascii_host(parts.hostname)
    if scheme != "https" and not is_loopback_host(host):
        raise ValueError("issuer must use https unless its host is a loopback address")
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None and parts.port != _DEFAULT_PORTS[scheme]:
        netloc += f":{parts.port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))
