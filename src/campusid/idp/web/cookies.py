"""Set-Cookie headers for our own cookies (RFC 6265 4.1), written directly.

Every cookie we set holds a value we drew ourselves (base64url, `new_token`) under a fixed name,
so none needs the quoting that `http.cookies` exists for; building the header with it cost
~15 µs a cookie, three on every password login. A name or value outside the RFC's token and
cookie-octet characters is refused here (ValueError), never quoted or passed on.
"""

from __future__ import annotations

import re

from starlette.responses import Response

_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # RFC 6265 4.1.1 cookie-name: an RFC 2616 token
_VALUE = re.compile(r"[!#-+\--:<-\[\]-~]*")  # cookie-octet: printable US-ASCII except " , ; \ and space
EXPIRED = "expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0"


def header(name: str, value: str, attributes: str, *, secure: bool) -> bytes:
    """`name=value; <attributes>; Path=/; SameSite=lax; HttpOnly[; Secure]` as header bytes."""
    if not _NAME.fullmatch(name) or not _VALUE.fullmatch(value):
        raise ValueError("a cookie name or value with characters RFC 6265 does not allow")
    secure_flag = "; Secure" if secure else ""
    return f"{name}={value}; {attributes}; Path=/; SameSite=lax; HttpOnly{secure_flag}".encode("ascii")


def set_cookie(response: Response, name: str, value: str, max_age: int, *, secure: bool) -> None:
    """An HttpOnly, SameSite=Lax cookie for the whole site (Secure under https)."""
    response.raw_headers.append((b"set-cookie", header(name, value, f"Max-Age={int(max_age)}", secure=secure)))


def clear_cookie(response: Response, name: str, *, secure: bool) -> None:
    """The cookie `name`, with the same attributes, expired at once."""
    response.raw_headers.append((b"set-cookie", header(name, "", EXPIRED, secure=secure)))
