"""Strict parameter parsing for OAuth endpoints.

RFC 6749 3.1 / 3.2: "Request and response parameters MUST NOT be included more than once."
Percent-decoded values must be UTF-8; anything else is refused (`invalid_request`), never a 500.
CAS 3.0 (2.5.1 INVALID_REQUEST) refuses a repeated parameter the same way.
"""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from campusid.i18n import N_
from campusid.idp.errors import RequestError

MAX_VALUE = 4096
MAX_PARAMS = 64


def decode_component(raw: bytes, what: str = N_("a parameter")) -> str:
    """One form-urlencoded name or value: `+` and %XX decoded, UTF-8, no NUL (which no database
    column can hold)."""
    try:
        if b"%" in raw or b"+" in raw:
            raw = unquote_to_bytes(raw.replace(b"+", b" "))
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RequestError(N_("%(what)s is not valid UTF-8", what=what)) from None
    if "\x00" in text:
        raise RequestError(N_("%(what)s contains a NUL character", what=what))
    return text


def parse_urlencoded(raw: bytes, *, max_value: int = MAX_VALUE) -> dict[str, str]:
    """Parse `a=1&b=2` strictly: duplicates, oversized values and bad encodings are refused."""
    out: dict[str, str] = {}
    if not raw:
        return out
    pairs = [p for p in raw.split(b"&") if p]
    if len(pairs) > MAX_PARAMS:
        raise RequestError(N_("too many parameters"))
    for pair in pairs:
        key_raw, _, value_raw = pair.partition(b"=")
        key = decode_component(key_raw, N_("a parameter name"))
        value = decode_component(value_raw, N_("parameter %(name)r", name=key[:40]))
        if len(value) > max_value:
            raise RequestError(N_("parameter %(name)r is too long", name=key[:40]))
        if key in out:
            raise RequestError(N_("parameter %(name)r is given more than once", name=key[:40]))
        out[key] = value
    return out
