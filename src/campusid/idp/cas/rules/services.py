"""Service URLs: which may be registered, which a request may name, and how one matches (docs/cas.md).

A CAS `service` is where the browser goes back with its ticket (Apereo CAS Protocol 3.0.3 2.1.1),
so matching it is what keeps /cas/login from being an open redirect. campusid matches without
regular expressions or wildcards (unlike Apereo's RegexRegisteredService, on purpose):

- scheme and host are compared case-insensitively, the host in its ASCII form (IDNA 2008 / UTS 46,
  RFC 5891), the port with the scheme's default made explicit (RFC 3986 6.2.3);
- the path equals the registered path or continues it at a segment boundary: `/portal` matches
  `/portal`, `/portal/` and `/portal/x`, never `/portalx` (RFC 3986 3.3: "/" separates segments);
- the query is ignored for matching and kept for the redirect; a fragment, user information
  (RFC 3986 3.2.1), a `.` or `..` segment (raw or `%2e`-encoded: RFC 3986 5.2.4 would remove
  it), a backslash (browsers read it as "/"), a control character or space, more than 2,048
  characters, or anything but an absolute http(s) URL are refused outright;
- `https`, or `http` on a loopback host only (127.0.0.0/8, [::1], localhost).

A registered service is kept in its canonical form (`canonical`): lower-case scheme and ASCII host,
the default port dropped, no query; the store keeps each by its origin (`scheme://host[:port]`) and
path, and /cas/login looks them up by the request service's origin.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

import idna

from campusid.i18n import N_, Message
from campusid.idp.issuer import is_loopback_host
from campusid.issuer import ascii_name

MAX_SERVICE = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}
_DOT_SEGMENT = re.compile(r"^(?:\.|%2e){1,2}$", re.IGNORECASE)


class ServiceRefused(ValueError):
    """The URL cannot be a CAS service; `message` says why, marked for translation (for people: the
    error page, the console, the CLI), `str()` in English (a protocol answer's description, logs)."""

    def __init__(self, message: Message) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class ServiceURL:
    """A service URL taken apart: scheme, ASCII host, port (the default when none is written), path
    (as sent, at least "/") and query; `given` is the URL as it came."""

    given: str
    scheme: str
    host: str
    port: int
    path: str
    query: str

    @property
    def origin(self) -> str:
        """scheme://host[:port], lower-case ASCII, the default port dropped (so `:443` and none are
        one origin): the key registered services are looked up by."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port == DEFAULT_PORTS[self.scheme] else f":{self.port}"
        return f"{self.scheme}://{shown}{port}"

    @property
    def canonical(self) -> str:
        """The registered form: the origin and the path, no query."""
        return self.origin + self.path


def _ascii_host(host: str, bracketed: bool) -> str:
    """The host in the form every comparison uses: an IP literal as written (IPv6 in its RFC 5952
    form), a name through UTS 46 to its lower-case ASCII form (the issuer's rule: campusid.issuer)."""
    if bracketed:
        if "%" in host:
            raise ServiceRefused(N_("must not carry an IPv6 zone"))
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError:
            raise ServiceRefused(N_("has an invalid IPv6 address")) from None
    try:
        return ascii_name(host)
    except (idna.IDNAError, UnicodeError):
        raise ServiceRefused(N_("has an invalid host name")) from None


def parse_service(value: str) -> ServiceURL:
    """`value` as a service URL, or ServiceRefused saying why it can never be one."""
    if not value:
        raise ServiceRefused(N_("is empty"))
    if len(value) > MAX_SERVICE:
        raise ServiceRefused(N_("is longer than %(max)s characters", max=MAX_SERVICE))
    if any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in value):
        raise ServiceRefused(N_("contains spaces or control characters"))
    if "\\" in value:
        raise ServiceRefused(N_("contains a backslash"))
    if "#" in value:
        raise ServiceRefused(N_("has a fragment (#…)"))
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ServiceRefused(N_("is not a valid URL")) from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not value[: len(scheme) + 3].lower() == scheme + "://":
        raise ServiceRefused(N_("is not an absolute http(s) URL"))
    if "@" in parts.netloc:
        raise ServiceRefused(N_("has user information (user@host)"))
    if not parts.hostname:
        raise ServiceRefused(N_("has no host"))
    host = _ascii_host(parts.hostname, parts.netloc.startswith("["))
    if scheme == "http" and not is_loopback_host(host):
        raise ServiceRefused(N_("uses http on a host that is not loopback (https is required)"))
    path = parts.path or "/"
    if any(_DOT_SEGMENT.match(segment) for segment in path.split("/")):
        raise ServiceRefused(N_("has a '.' or '..' path segment"))
    return ServiceURL(value, scheme, host, port or DEFAULT_PORTS[scheme], path, parts.query)


def registration_problem(value: str) -> str | None:
    """Why `value` cannot be registered as a service (None when it can): a request's rules, and no
    query (a registered service is a prefix of addresses, not one address)."""
    try:
        parse_service(value)
    except ServiceRefused as exc:
        return exc.message
    if "?" in value:
        return N_("has a query (?…); register the address without it")
    if "*" in value:
        return N_("has a wildcard (*); register the address that every service URL begins with")
    return None


def canonical(value: str) -> str:
    """The registered form of a service that passed `registration_problem`."""
    return parse_service(value).canonical


def path_matches(requested: str, registered: str) -> bool:
    """The requested path equals the registered one or continues it at a segment boundary."""
    if requested == registered:
        return True
    prefix = registered if registered.endswith("/") else registered + "/"
    return requested.startswith(prefix)


def best_match(service: ServiceURL, candidates):
    """Of `candidates` ((registered path, app) at the service's origin), the app whose registered
    path matches with the most specific (longest) path; None when none matches, or when two apps
    register that same path (the service then belongs to no one for sure)."""
    best, best_len, tied = None, -1, False
    for path, app in candidates:
        if not path_matches(service.path, path):
            continue
        if len(path) > best_len:
            best, best_len, tied = app, len(path), False
        elif (
            len(path) == best_len
            and app is not best
            and getattr(app, "client_id", app) != getattr(best, "client_id", best)
        ):
            tied = True
    return None if tied else best


def matches_any(service: ServiceURL, registered: list[str] | tuple[str, ...]) -> bool:
    """`service` matches one of an app's registered services (a pgtUrl, CAS 3.0 2.5.4)."""
    for value in registered:
        try:
            own = parse_service(value)
        except ServiceRefused:
            continue
        if own.origin == service.origin and path_matches(service.path, own.path):
            return True
    return False
