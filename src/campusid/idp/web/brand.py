"""The brand's two resources, served by the IdP itself so the pages load nothing from elsewhere and
keep their CSP (`style-src 'self'`, `img-src 'self'`): `/brand/style.css`, the accent colour, and
`/brand/logo`, the logo file read at start (idp/brand.py). An SVG logo is sent with a CSP of its own
that runs no script, should anyone open it as a page."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from campusid.idp.brand import BrandSettings

CACHE = "public, max-age=3600"
LOGO_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"


def stylesheet(brand: BrandSettings) -> bytes:
    """The accent colour (checked at start to be #rgb or #rrggbb) over campusid.css's default."""
    return f":root {{ --brand:{brand.color}; }}\n".encode("ascii")


def routes(brand: BrandSettings) -> list[Route]:
    css = stylesheet(brand)
    headers = {"Cache-Control": CACHE, "X-Content-Type-Options": "nosniff"}

    async def style(request: Request) -> Response:
        return Response(css, media_type="text/css", headers=headers)

    out = [Route("/brand/style.css", style, methods=["GET"])]
    if brand.logo is not None:
        logo = brand.logo

        async def logo_endpoint(request: Request) -> Response:
            logo_headers = {**headers, "Content-Security-Policy": LOGO_CSP}
            return Response(logo.content, media_type=logo.media_type, headers=logo_headers)

        out.append(Route("/brand/logo", logo_endpoint, methods=["GET"]))
    return out
