"""Canonical issuer (SPEC 2.1, DESIGN 3.1).

The configured issuer may be written in Unicode (an IDN). Every protocol use — discovery, the
`iss` claim, the RFC 9207 `iss` response parameter and every validation — uses its canonical
ASCII form: IDNA 2008 with UTS 46 mapping (the `idna` package; the stdlib codec is IDNA 2003),
lower-case host, no default port, no trailing slash. The Unicode form is for people only.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

import idna


class IssuerError(ValueError):
    """The configured issuer cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Issuer:
    canonical: str  # ASCII, used on the wire and in every check
    display: str  # Unicode form for pages
    scheme: str
    host: str  # ASCII host (without brackets for IPv6)
    port: int | None
    path: str  # "" or "/prefix" without trailing slash

    def __str__(self) -> str:
        return self.canonical


def is_loopback_host(host: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost` are loopback (RFC 8252 8.3; DESIGN 3.1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _ascii_host(host: str) -> str:
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        return idna.encode(host, uts46=True).decode("ascii").lower()
    except idna.IDNAError as exc:
        raise IssuerError(
            f"CAMPUSID_ISSUER has an invalid host name {host!r} ({exc}); use a valid domain name, "
            "for example https://login.example.edu"
        ) from None


def _unicode_host(ascii_host: str) -> str:
    try:
        return idna.decode(ascii_host)
    except (idna.IDNAError, UnicodeError):
        return ascii_host


def canonical_issuer(value: str) -> Issuer:
    """Parse and canonicalise an issuer URL, refusing anything that cannot be one."""
    raw = (value or "").strip()
    if not raw:
        raise IssuerError("CAMPUSID_ISSUER is empty; set it to the public URL of this server")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise IssuerError(f"CAMPUSID_ISSUER is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise IssuerError("CAMPUSID_ISSUER must start with https:// (or http:// on a loopback host)")
    if parts.query or raw.endswith("?"):
        raise IssuerError("CAMPUSID_ISSUER must not have a query (?…); remove it (OIDC Discovery 4.3)")
    if parts.fragment or "#" in raw:
        raise IssuerError("CAMPUSID_ISSUER must not have a fragment (#…); remove it")
    if parts.username is not None or parts.password is not None:
        raise IssuerError("CAMPUSID_ISSUER must not contain user information (user@host)")
    host = parts.hostname or ""
    if not host:
        raise IssuerError("CAMPUSID_ISSUER has no host; write it like https://login.example.edu")
    ascii_host = _ascii_host(host)
    if parts.scheme == "http" and not is_loopback_host(ascii_host):
        raise IssuerError(
            f"CAMPUSID_ISSUER uses plain http on the non-loopback host {host!r}; use https:// "
            "(http is allowed only for 127.0.0.1, [::1] and localhost)"
        )
    default_port = 443 if parts.scheme == "https" else 80
    if port == default_port:
        port = None
    path = parts.path.rstrip("/")
    if any(seg in (".", "..") for seg in path.split("/")):
        raise IssuerError("CAMPUSID_ISSUER path must not contain '.' or '..' segments")
    bracketed = f"[{ascii_host}]" if ":" in ascii_host else ascii_host
    netloc = bracketed if port is None else f"{bracketed}:{port}"
    display_host = _unicode_host(ascii_host)
    display_netloc = (f"[{display_host}]" if ":" in display_host else display_host) + (
        "" if port is None else f":{port}"
    )
    return Issuer(
        canonical=f"{parts.scheme}://{netloc}{path}",
        display=f"{parts.scheme}://{display_netloc}{path}",
        scheme=parts.scheme,
        host=ascii_host,
        port=port,
        path=path,
    )
