"""Issuer identifiers: the one canonical form that the identity provider and its relying parties share.

The IdP publishes its issuer in this form (discovery, the ``iss`` claim, the RFC 9207 ``iss``
parameter). A relying party canonicalises the issuer it is configured with in the same way and then
compares what the network sends character for character (OpenID Connect Discovery 1.0 section 4.3,
RFC 9207 section 2.4), so both sides must agree on every rule below; this module is the only place
that states them.

- An issuer is an absolute ``https`` URL with no query and no fragment, not even empty ones, and no
  user information (OpenID Connect Core 1.0 section 2, Discovery 1.0 section 3, RFC 8414 section 2).
  Plain ``http`` is accepted on a loopback host only (127.0.0.0/8, ``[::1]``, ``localhost``), for
  development.
- Scheme and host are case-insensitive (RFC 3986 section 6.2.2.1): both are lower case. A host
  name is converted to its ASCII form by UTS 46 processing, non-transitional, with IDNA 2008
  validation of every label, ASCII ones and ``xn--`` ones included (UTS 46 section 4, RFC 5891
  section 5), using the ``idna`` package (the stdlib codec is IDNA 2003). An IP literal stays as
  written, except that IPv6 takes its RFC 5952 text form, in brackets.
- The scheme's default port is dropped (RFC 3986 section 6.2.3).
- The path is ASCII URI characters only (RFC 3986 section 3.3; a Unicode path must be
  percent-encoded first, RFC 3987 section 3.1), without ``.`` or ``..`` segments, and without a
  trailing slash. Percent-encoding is normalised (RFC 3986 sections 6.2.2.1 and 6.2.2.2): hex
  digits in upper case, and an encoded unreserved character (``%7E``) written as itself (``~``).

- At most 2,048 characters as configured: an issuer is typed or pasted by a person, and a longer
  value is a mistake (a whole file pasted, a runaway template), not an address.

Anything that cannot be put in this form is refused with :class:`IssuerError`, whose message says
what to change. The Unicode form of the host (:attr:`Issuer.display`) is for people only, never for
a protocol check.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

import idna

_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 3986 section 3.3: a path is "/"-separated pchar = unreserved / pct-encoded / sub-delims / ":" / "@".
_PATH = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-Fa-f]{2})*")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_EXAMPLE = "for example https://login.example.edu"
MAX_LENGTH = 2048


class IssuerError(ValueError):
    """The value cannot be an issuer identifier; the message says what to change."""


@dataclass(frozen=True)
class Issuer:
    canonical: str  # ASCII, used on the wire and in every check
    display: str  # Unicode form of the host, for people
    scheme: str
    host: str  # ASCII host (without brackets for IPv6)
    port: int | None  # None for the scheme's default port
    path: str  # "" or "/prefix" without a trailing slash

    def __str__(self) -> str:
        return self.canonical


def is_loopback_host(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 (with or without brackets) and ``localhost``."""
    host = host.strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_issuer(value: str, *, name: str = "issuer") -> Issuer:
    """Canonicalise an issuer URL, or raise :class:`IssuerError`; ``name`` begins each message."""
    raw = (value or "").strip()
    if not raw:
        raise IssuerError(f"{name} is empty; set it to the issuer's URL, {_EXAMPLE}")
    if len(raw) > MAX_LENGTH:
        raise IssuerError(f"{name} is longer than {MAX_LENGTH} characters ({len(raw)}); set it to the issuer's URL")
    if any(c.isspace() or unicodedata.category(c) == "Cc" for c in raw):
        # urlsplit silently drops tabs and line breaks; a pasted value must not change that way.
        raise IssuerError(f"{name} must not contain spaces or control characters")
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError as exc:
        raise IssuerError(f"{name} is not a valid URL ({exc})") from None
    scheme = parts.scheme
    if scheme not in _DEFAULT_PORTS:
        raise IssuerError(f"{name} must start with https:// (or http:// on a loopback host), {_EXAMPLE}")
    if "?" in raw:
        raise IssuerError(f"{name} must not have a query (?…); remove it (OpenID Connect Discovery 1.0 section 4.3)")
    if "#" in raw:
        raise IssuerError(f"{name} must not have a fragment (#…); remove it (OpenID Connect Discovery 1.0 section 4.3)")
    if parts.username is not None or parts.password is not None:
        raise IssuerError(f"{name} must not contain user information (user@host)")
    host = _ascii_host(parts, name)
    if scheme == "http" and not is_loopback_host(host):
        raise IssuerError(
            f"{name} uses plain http on the non-loopback host {parts.hostname!r}; use https:// "
            "(http is allowed only for 127.0.0.1, [::1] and localhost)"
        )
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    path = _path(parts.path, name)
    suffix = "" if port is None else f":{port}"
    display_host = _unicode_host(host)
    return Issuer(
        canonical=f"{scheme}://{_bracketed(host)}{suffix}{path}",
        display=f"{scheme}://{_bracketed(display_host)}{suffix}{path}",
        scheme=scheme,
        host=host,
        port=port,
        path=path,
    )


def ascii_name(host: str) -> str:
    """A host that is not an IPv6 literal, in the form every comparison uses: an IPv4 literal as
    written, a name through UTS 46 to its lower-case ASCII form (idna.IDNAError when it has none).
    The CAS face's service URLs use it too (idp/cas/rules/services.py)."""
    try:
        ipaddress.IPv4Address(host)
        return host
    except ValueError:
        pass
    return idna.encode(host, uts46=True).decode("ascii").lower()


def _ascii_host(parts: SplitResult, name: str) -> str:
    host = parts.hostname or ""
    if not host:
        raise IssuerError(f"{name} has no host; write it like https://login.example.edu")
    if parts.netloc.rpartition("@")[2].startswith("["):
        return _ipv6_literal(host, name)
    try:
        return ascii_name(host)
    except idna.IDNAError as exc:
        raise IssuerError(
            f"{name} has an invalid host name {host!r} ({exc}); use a valid domain name, {_EXAMPLE}"
        ) from None


def _ipv6_literal(host: str, name: str) -> str:
    if "%" in host:
        raise IssuerError(f"{name} must not carry an IPv6 zone (%…): it names a network interface of one machine")
    try:
        address = ipaddress.IPv6Address(host)
    except ValueError:
        raise IssuerError(f"{name} has an invalid IPv6 address [{host}]") from None
    return str(address)  # the RFC 5952 text form: lower case, zeros compressed


def _path(path: str, name: str) -> str:
    if not _PATH.fullmatch(path):
        raise IssuerError(
            f"{name} has characters that a URL path cannot hold ({path!r}); percent-encode them "
            "(RFC 3986 section 2.1) or choose an ASCII path"
        )
    path = _PERCENT.sub(_normal_percent, path).rstrip("/")
    if any(segment in (".", "..") for segment in path.split("/")):
        raise IssuerError(f"{name} path must not contain '.' or '..' segments")
    return path


def _normal_percent(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _unicode_host(ascii_host: str) -> str:
    if ":" in ascii_host:
        return ascii_host
    try:
        return idna.decode(ascii_host)
    except (idna.IDNAError, UnicodeError):
        return ascii_host
