"""The read-only embedded resources: the status page, its static files and the OpenAPI document.

They are loaded once from the package at app creation; nothing here reads the file system per
request, so there is no path to traverse.
"""

from __future__ import annotations

import json
from importlib import resources as importlib_resources
from typing import Any

from starlette.responses import Response

_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


class EmbeddedResources:
    def __init__(self, openapi: dict[str, Any]) -> None:
        root = importlib_resources.files(__package__).joinpath("resources")
        self.index = root.joinpath("index.html").read_bytes()
        self.static: dict[str, tuple[bytes, str]] = {}
        for entry in root.joinpath("static").iterdir():
            suffix = "." + entry.name.rsplit(".", 1)[-1]
            if entry.is_file() and suffix in _MEDIA_TYPES:
                self.static[entry.name] = (entry.read_bytes(), _MEDIA_TYPES[suffix])
        self.openapi = json.dumps(openapi, indent=2).encode("utf-8")

    def index_response(self) -> Response:
        return Response(self.index, media_type=_MEDIA_TYPES[".html"], headers=_PAGE_HEADERS)

    def openapi_response(self) -> Response:
        return Response(self.openapi, media_type="application/json", headers=_PAGE_HEADERS)

    def static_response(self, name: str) -> Response | None:
        found = self.static.get(name)
        if found is None:
            return None
        return Response(found[0], media_type=found[1], headers=_PAGE_HEADERS)
