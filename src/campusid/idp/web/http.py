"""Request reading and response building shared by the handlers: strict bodies, JSON errors,
security headers for pages (no referrer and no framing: RFC 9700 sections 4.2 and 4.16)."""

from __future__ import annotations

import json
from collections.abc import Callable
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from campusid.idp import i18n
from campusid.idp.protocol.errors import InvalidClient, InvalidRequest, OAuthError
from campusid.idp.protocol.params import parse_urlencoded

MAX_BODY = 64 * 1024
FORM = "application/x-www-form-urlencoded"

PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
}
# Pages with a passkey button run our own script, which fetches the ceremony's options from here.
PASSKEY_CSP = PAGE_HEADERS["Content-Security-Policy"].replace(
    "default-src 'none';", "default-src 'none'; script-src 'self'; connect-src 'self';"
)
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
_json = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # built once, not per response


# The longest page address a redirect carries back (docs/deployment.md): its Location header must fit
# the reverse proxy's buffer for an upstream's headers (nginx's proxy_buffer_size, 4 KB by default),
# or the proxy answers 502 in place of the redirect.
MAX_RETURN = 1024


def return_to(request: Request, home: str) -> str:
    """The address a sign-in (or a detour) returns to: this request's path and query; the path
    alone when that is longer than MAX_RETURN, and `home` when the path alone is."""
    path = request.url.path
    target = path + (f"?{request.url.query}" if request.url.query else "")
    if len(quote(target, safe="/")) <= MAX_RETURN:
        return target
    return path if len(quote(path, safe="/")) <= MAX_RETURN else home


def detour(url: str, request: Request, home: str) -> str:
    """`url` with ?next= the address to come back to (`return_to`)."""
    return url + "?next=" + quote(return_to(request, home), safe="/")


def see_other(url: str) -> RedirectResponse:
    """The answer to a form or a detour: 303, so the browser GETs `url` (RFC 9110 15.4.4), never cached."""
    return RedirectResponse(url, status_code=303, headers={"Cache-Control": "no-store"})


def language(request: Request) -> tuple[str, Callable[[str], str]]:
    """The page language the browser's Accept-Language prefers (i18n.choose), and its translator."""
    lang = i18n.choose(request.headers.get("accept-language"))
    return lang, i18n.translator(lang)


class BodyTooLarge(InvalidRequest):
    status = 413


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise BodyTooLarge("the request body is too large")
        except ValueError:
            raise InvalidRequest("Content-Length is not a number") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge("the request body is too large")
        chunks.append(chunk)
    return b"".join(chunks)


def is_form(request: Request) -> bool:
    ctype = request.headers.get("content-type", "")
    return ctype.split(";", 1)[0].strip().lower() == FORM


async def read_form(request: Request) -> dict[str, str]:
    """An application/x-www-form-urlencoded body, parsed strictly (no duplicates, UTF-8)."""
    if not is_form(request):
        raise InvalidRequest(f"the request body must be {FORM}")
    return parse_urlencoded(await read_body(request))


def query_params(request: Request) -> dict[str, str]:
    return parse_urlencoded(request.scope.get("query_string", b""))


def json_response(data, status: int = 200, headers: dict | None = None) -> Response:
    body = _json(data).encode("utf-8")
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def oauth_error_response(exc: OAuthError, headers: dict | None = None) -> Response:
    out = dict(NO_STORE)
    if headers:
        out.update(headers)
    retry = getattr(exc, "retry_after", None)
    if retry is not None:
        out["Retry-After"] = str(int(retry))
    return json_response(exc.body(), exc.status, out)


BASIC_CHALLENGE = {"WWW-Authenticate": 'Basic realm="campusid", charset="UTF-8"'}


def client_error_response(exc: OAuthError, headers: dict | None = None) -> Response:
    """The error of an endpoint that authenticates the client: ``invalid_client`` is a 401 with a
    Basic challenge (RFC 6749 section 5.2), any other error goes out with ``headers``."""
    if isinstance(exc, InvalidClient):
        return oauth_error_response(exc, BASIC_CHALLENGE)
    return oauth_error_response(exc, headers)


def page(ctx, template: str, status: int = 200, headers: dict | None = None, **values) -> HTMLResponse:
    html = ctx.templates.get_template(template).render(
        issuer_display=ctx.settings.issuer.display,
        static=ctx.path("/static"),
        path=ctx.path,
        **values,
    )
    out = dict(PAGE_HEADERS)
    if headers:
        out.update(headers)
    return HTMLResponse(html, status_code=status, headers=out)


def error_page(
    ctx, message: str, status: int = 400, title: str = "This sign-in request cannot be used"
) -> HTMLResponse:
    return page(ctx, "error.html", status=status, title=title, message=message)
