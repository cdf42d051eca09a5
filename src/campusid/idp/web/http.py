"""Request reading and response building shared by every face and page: strict bodies, security
headers for pages (no referrer and no framing: RFC 9700 sections 4.2 and 4.16), and one of the
three places where a refused request (idp/errors.py) becomes an answer: `json_error` for JSON
endpoints (the others: `page_error` for pages, web/render.py, and the authorization endpoint's,
which shows a page until the client's redirect URI is verified and redirects after:
idp/oidc/authorize.py)."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from campusid.i18n import N_
from campusid.idp.errors import BodyTooLarge, RequestError
from campusid.idp.web.params import parse_urlencoded

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
Handler = Callable[[Request], Awaitable[Response]]
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


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise BodyTooLarge(N_("the request body is too large"))
        except ValueError:
            raise RequestError(N_("Content-Length is not a number")) from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(N_("the request body is too large"))
        chunks.append(chunk)
    return b"".join(chunks)


def is_form(request: Request) -> bool:
    ctype = request.headers.get("content-type", "")
    return ctype.split(";", 1)[0].strip().lower() == FORM


async def read_form(request: Request) -> dict[str, str]:
    """An application/x-www-form-urlencoded body, parsed strictly (no duplicates, UTF-8)."""
    if not is_form(request):
        raise RequestError(N_("the request body must be %(type)s", type=FORM))
    return parse_urlencoded(await read_body(request))


async def read_form_or_refusal(request: Request) -> tuple[dict[str, str], RequestError | None]:
    """The form, or ({}, why it could not be read): for a page that answers with its own form
    again, saying what was wrong."""
    try:
        return await read_form(request), None
    except RequestError as exc:
        return {}, exc


def query_params(request: Request) -> dict[str, str]:
    return parse_urlencoded(request.scope.get("query_string", b""))


def json_response(data, status: int = 200, headers: dict | None = None) -> Response:
    body = _json(data).encode("utf-8")
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def json_error(exc: RequestError, headers: dict | None = None) -> Response:
    """The JSON answer to a refused request (RFC 6749 5.2, RFC 6750 3): its status, its body and
    the headers it carries (a challenge, Retry-After), never cached; `headers` adds the
    endpoint's own (CORS)."""
    return json_response(exc.body(), exc.status, {**NO_STORE, **(headers or {}), **exc.headers})


def json_endpoint(
    handler: Handler | None = None,
    *,
    headers: dict | None = None,
    refine: Callable[[RequestError], RequestError] | None = None,
):
    """A JSON endpoint: a RequestError its handler raises is answered by `json_error`, with the
    endpoint's `headers` (CORS), after `refine` (a resource server's errors all carry a Bearer
    challenge: RFC 6750 3). Used bare (`@json_endpoint`) or with options."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestError as exc:
                return json_error(refine(exc) if refine is not None else exc, headers)

        return endpoint

    return wrap(handler) if handler is not None else wrap
