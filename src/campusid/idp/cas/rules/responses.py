"""The answers of the validation and proxy endpoints (Apereo CAS Protocol 3.0.3 2.4.2, 2.5.2, 2.7.2,
Appendix A's XSD; JSON as CAS 3.0 2.5.1 `format=JSON` and Apereo's JSON view).

XML: `<cas:serviceResponse xmlns:cas="http://www.yale.edu/tp/cas">`, every text and attribute value
XML-escaped and stripped of characters XML 1.0 cannot hold (2.2), and no whitespace inside
`cas:user` or an attribute's element: mod_auth_cas and phpCAS take an element's text as it is, so a
newline there would become part of the username. JSON: `{"serviceResponse": {...}}` with every
attribute's values as a list. CAS 1.0 `/validate`: `yes\\n<user>\\n` or `no\\n\\n` (2.4.2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

NS = "http://www.yale.edu/tp/cas"
XML_TYPE = "application/xml; charset=UTF-8"
JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=UTF-8"
# XML 1.0 2.2 Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}
_ESCAPE = re.compile("[&<>\"']")


def xml_text(value: str) -> str:
    """`value` as XML character data or an attribute value: the five special characters escaped,
    characters XML cannot carry replaced by U+FFFD."""
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], _NOT_XML_CHAR.sub("\ufffd", value))


@dataclass(frozen=True)
class Success:
    """A successful validation: the username, the attributes ({name: [values]}, in release order),
    the PGTIOU when a PGT was granted, the proxies (most recent first)."""

    user: str
    attributes: Mapping[str, Sequence[str | bool]] = field(default_factory=dict)
    pgt_iou: str | None = None
    proxies: Sequence[str] = ()


def _xml_value(value: str | bool) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else xml_text(value)


def _envelope(body: str) -> str:
    return f'<cas:serviceResponse xmlns:cas="{NS}">\n{body}\n</cas:serviceResponse>\n'


def success_xml(success: Success) -> str:
    lines = ["<cas:authenticationSuccess>", f"<cas:user>{xml_text(success.user)}</cas:user>"]
    if success.attributes:
        lines.append("<cas:attributes>")
        for name, values in success.attributes.items():
            lines.extend(f"<cas:{name}>{_xml_value(v)}</cas:{name}>" for v in values)
        lines.append("</cas:attributes>")
    if success.pgt_iou:
        lines.append(f"<cas:proxyGrantingTicket>{xml_text(success.pgt_iou)}</cas:proxyGrantingTicket>")
    if success.proxies:
        lines.append("<cas:proxies>")
        lines.extend(f"<cas:proxy>{xml_text(p)}</cas:proxy>" for p in success.proxies)
        lines.append("</cas:proxies>")
    lines.append("</cas:authenticationSuccess>")
    return _envelope("\n".join(lines))


def success_json(success: Success) -> str:
    body: dict = {"user": success.user, "attributes": {k: list(v) for k, v in success.attributes.items()}}
    if success.pgt_iou:
        body["proxyGrantingTicket"] = success.pgt_iou
    if success.proxies:
        body["proxies"] = list(success.proxies)
    return json.dumps({"serviceResponse": {"authenticationSuccess": body}}, ensure_ascii=False)


def failure_xml(code: str, description: str, element: str = "authenticationFailure") -> str:
    return _envelope(f'<cas:{element} code="{xml_text(code)}">{xml_text(description)}</cas:{element}>')


def failure_json(code: str, description: str, element: str = "authenticationFailure") -> str:
    return json.dumps({"serviceResponse": {element: {"code": code, "description": description}}}, ensure_ascii=False)


def proxy_success_xml(ticket: str) -> str:
    return _envelope(f"<cas:proxySuccess>\n<cas:proxyTicket>{xml_text(ticket)}</cas:proxyTicket>\n</cas:proxySuccess>")


def proxy_success_json(ticket: str) -> str:
    return json.dumps({"serviceResponse": {"proxySuccess": {"proxyTicket": ticket}}})


def validate_text(user: str | None) -> str:
    """CAS 1.0 (2.4.2): `yes` and the username on two lines, or `no` and an empty line. A username
    with a line break could not be told apart from the protocol's lines: it is answered `no`."""
    if user is None or "\n" in user or "\r" in user:
        return "no\n\n"
    return f"yes\n{user}\n"
