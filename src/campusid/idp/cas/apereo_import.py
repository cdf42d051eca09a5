"""Migrating from Apereo CAS: its JSON service registry's definitions (`RegexRegisteredService`) read
into draft CAS apps (`campusid apps import-cas`, docs/cas.md).

Apereo matches a service against a regular expression (`serviceId`); campusid matches against
registered URL prefixes at a segment boundary, without regular expressions (rules/services.py). A
definition is imported only when its pattern *is* a URL prefix written as a regular expression:

    ^https://app\\.example\\.edu/portal/.*     ->  https://app.example.edu/portal/
    ^https://app\\.example\\.edu(/.*)?         ->  https://app.example.edu/
    https://app.example.edu/cas/login        ->  https://app.example.edu/cas/login   (a literal)

that is: an optional `^`, a literal scheme (`https`; `https?` is read as https), a literal host
with its dots escaped and an optional port, a literal path (escapes such as `\\.` `\\/` `\\-`
undone), and at most one of the suffixes `.*`, `.+`, `/.*`, `(/.*)?`, `(\\?.*)?`, `$`. Anything
else is refused with its reason: a wildcard or an unescaped `.` in the host (`.*\\.example\\.edu`,
`app.example.edu` matches `appXexample.edu`), an alternation (`(a|b)`), a character class, a
quantifier inside the path, plain http to a host that is not loopback. The release policy becomes
scopes (allowed attributes by their usual names: cn, displayName, givenName, sn → profile;
mail → email; studentNumber and the like → student_number), a proxy policy asks for `cas_proxy`.
Nothing is activated: every app is a draft for the review.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from campusid.idp.cas.rules.services import ServiceRefused, canonical, registration_problem

REGEX_CLASSES = ("RegexRegisteredService", "CasRegisteredService")
# How a pattern may end: what it allows after the prefix (all the same to a prefix match).
_SUFFIXES = (r"(/.*)?$", r"(/.*)?", r"(\?.*)?$", r"(\?.*)?", ".*$", ".*", ".+$", ".+", "$")
_SCHEME = re.compile(r"^(https\??|http)(?:\\?:\\?/\\?/|://)")
_HOST_CHAR = re.compile(r"[A-Za-z0-9\-]")
_META = set(".^$*+?()[]{}|\\")
PROFILE = ("cn", "displayname", "givenname", "sn", "name", "firstname", "lastname", "surname", "commonname")
EMAIL = ("mail", "email", "emailaddress")
STUDENT_NUMBER = ("studentnumber", "studentid", "employeenumber", "studentno", "xh")


class Refused(ValueError):
    """The definition cannot become a draft CAS app; the message says why."""


@dataclass
class Draft:
    """A definition read as a draft CAS app."""

    name: str
    description: str
    services: list[str]
    scopes: list[str]
    grant_types: list[str]
    source_id: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def client_id(self) -> str:
        base = re.sub(r"[^A-Za-z0-9]+", "-", self.name).strip("-").lower()[:40] or "app"
        return f"cas-{self.source_id}" if self.source_id else f"cas-{base}"


def strip_comments(text: str) -> str:
    """JSON with // and /* */ comments (Apereo's registry files often carry them) as plain JSON."""
    out, i, in_string = [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _unescape_literal(text: str, where: str) -> str:
    """A regular expression that must be a literal: escapes undone; any other metacharacter refused."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 >= len(text):
                raise Refused(f"the {where} ends with a lone backslash")
            nxt = text[i + 1]
            if nxt.isalnum():
                raise Refused(f"the {where} has a character class (\\{nxt})")
            out.append(nxt)
            i += 2
            continue
        if c == "|":
            raise Refused(f"the {where} has an alternation (|)")
        if c in "[]":
            raise Refused(f"the {where} has a character class ([…])")
        if c in "()":
            raise Refused(f"the {where} has a group (…)")
        if c in "*+?{}":
            raise Refused(f"the {where} has a quantifier ({c})")
        if c == ".":
            raise Refused(f"the {where} has an unescaped '.', which matches any character")
        if c in "^$":
            raise Refused(f"the {where} has an anchor ({c}) in the middle")
        out.append(c)
        i += 1
    return "".join(out)


def prefix_of(pattern: str) -> str:
    """The URL prefix a serviceId pattern stands for; Refused when it is not one."""
    p = pattern.strip()
    if not p:
        raise Refused("the serviceId is empty")
    p = p.removeprefix("^")
    literal = p.removesuffix("$")
    if "://" in literal and not (set(literal) & (_META - {"."})):
        return literal  # a plain URL (Apereo read its dots as "any character"; here they are dots)
    match = _SCHEME.match(p)
    if not match:
        raise Refused("the serviceId does not begin with a literal https:// (or http://) scheme")
    scheme = "https" if match.group(1).startswith("https") else "http"
    rest = p[match.end() :]
    for suffix in _SUFFIXES:
        if rest.endswith(suffix) and not rest.endswith("\\" + suffix):
            rest = rest[: -len(suffix)]
            break
    host_end = len(rest)
    for i, c in enumerate(rest):
        if c == "/" or (c == "\\" and rest[i + 1 : i + 2] == "/"):
            host_end = i
            break
    host_part, path_part = rest[:host_end], rest[host_end:]
    _check_host(host_part)
    host = _unescape_literal(host_part, "host")
    path = _unescape_literal(path_part, "path") or "/"
    return f"{scheme}://{host}{path}"


def _check_host(host: str) -> None:
    """A literal host: letters, digits, '-', escaped dots, an optional :port; a wildcard, an
    unescaped dot or any other metacharacter is refused with its own reason."""
    if not host:
        raise Refused("the serviceId has no host")
    if ".*" in host or ".+" in host or "*" in host:
        raise Refused("the host is a wildcard (.* or *): a prefix must name one host")
    if "|" in host or "(" in host:
        raise Refused("the host has an alternation or group: register each host's address instead")
    if "[" in host:
        raise Refused("the host has a character class ([…])")
    i = 0
    while i < len(host):
        c = host[i]
        if c == "\\" and host[i + 1 : i + 2] == ".":
            i += 2
            continue
        if c == ".":
            raise Refused("the host has an unescaped '.', which matches any character (write \\.)")
        if c == ":" and host[i + 1 :].isdigit():
            return
        if not _HOST_CHAR.match(c):
            raise Refused(f"the host has {c!r}, which a literal host name cannot hold")
        i += 1


def _attribute_names(policy: dict) -> tuple[list[str], bool]:
    """(allowed attribute names, whether all are released) of an attribute release policy."""
    kind = str(policy.get("@class", "")).rsplit(".", 1)[-1]
    if kind == "ReturnAllAttributeReleasePolicy":
        return [], True
    allowed = policy.get("allowedAttributes")
    if isinstance(allowed, list) and len(allowed) == 2 and isinstance(allowed[1], list):
        return [str(a) for a in allowed[1]], False  # ["java.util.ArrayList", [...]]
    if isinstance(allowed, list):
        return [str(a) for a in allowed], False
    if isinstance(allowed, dict):
        return [str(k) for k in allowed if k != "@class"], False
    return [], False


def scopes_of(policy: Any, notes: list[str]) -> list[str]:
    """The bundles an Apereo attribute release policy asks for, in campusid's terms."""
    if not isinstance(policy, dict):
        return []
    names, everything = _attribute_names(policy)
    if everything:
        notes.append("released all attributes: imported as profile and email (student_number only by asking)")
        return ["profile", "email"]
    scopes: list[str] = []
    for name in names:
        key = name.replace("_", "").replace("-", "").lower()
        scope = (
            "profile"
            if key in PROFILE
            else "email"
            if key in EMAIL
            else "student_number"
            if key in STUDENT_NUMBER
            else None
        )
        if scope is None:
            notes.append(f"attribute {name!r} has no campusid equivalent and is not released")
        elif scope not in scopes:
            scopes.append(scope)
    return scopes


def read_definition(text: str) -> Draft:
    """One Apereo JSON service definition as a draft CAS app; Refused with the reason otherwise."""
    try:
        data = json.loads(strip_comments(text))
    except (ValueError, RecursionError) as exc:
        raise Refused(f"not a JSON service definition ({exc})") from None
    if not isinstance(data, dict):
        raise Refused("not a JSON service definition (an object is expected)")
    kind = str(data.get("@class", "")).rsplit(".", 1)[-1]
    if kind not in REGEX_CLASSES:
        raise Refused(f"{kind or 'a definition without @class'} is not a CAS RegexRegisteredService")
    pattern = data.get("serviceId")
    if not isinstance(pattern, str):
        raise Refused("the definition has no serviceId")
    service = prefix_of(pattern)
    problem = registration_problem(service)
    if problem:
        raise Refused(f"the service {service!r} {problem}")
    notes: list[str] = []
    path = service.split("://", 1)[1].partition("/")[2]
    if path and not path.endswith("/") and re.search(r"\.[*+]\$?$", pattern):
        # a note of the CLI's report to an operator (apps import-cas): English, as the CLI's output is
        notes.append(
            f"Apereo matched /{path}… inside a segment too; campusid matches /{path} and below only"  # i18n: ignore
        )
    name = str(data.get("name") or "").strip() or service
    try:
        services = [canonical(service)]
    except ServiceRefused as exc:  # pragma: no cover - registration_problem said it passes
        raise Refused(str(exc)) from None
    access = data.get("accessStrategy")
    if isinstance(access, dict) and access.get("enabled") is False:
        notes.append("disabled in Apereo CAS (accessStrategy.enabled false)")
    proxy = data.get("proxyPolicy")
    proxying = isinstance(proxy, dict) and "Refuse" not in str(proxy.get("@class", "Refuse"))
    if proxying:
        notes.append("asked for proxy tickets: cas_proxy is asked of the review")
    source = data.get("id")
    return Draft(
        name=name[:200],
        description=str(data.get("description") or "")[:2000],
        services=services,
        scopes=scopes_of(data.get("attributeReleasePolicy"), notes),
        grant_types=["cas_proxy"] if proxying else [],
        source_id=str(source) if isinstance(source, int | str) and str(source).isalnum() else None,
        notes=notes,
    )
