"""`create_app(settings)`: wires one independent OpenID Provider app; no work at import time."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles

from campusid.idp import admin, portal
from campusid.idp.api import create_api
from campusid.idp.settings import Settings
from campusid.idp.store import Store, open_store
from campusid.idp.web import authorize, pages, resources, token
from campusid.idp.web.context import build_context
from campusid.idp.web.http import PAGE_HEADERS, error_page, json_response
from campusid.records.api import RecordsAPI

log = logging.getLogger("campusid.idp")
STATIC = Path(__file__).parent / "web" / "static"
_JSON_PREFIXES = ("/oauth/", "/records/", "/api/", "/.well-known/")
# The endpoints every sign-in runs, reached without the router and middleware stack (DESIGN 6).
HOT_ROUTES = {("GET", "/oauth/authorize"), ("POST", "/login"), ("POST", "/oauth/token"), ("GET", "/oauth/userinfo")}


class IdentityProvider(Starlette):
    """Starlette with a direct way in for HOT_ROUTES.

    A request whose method and path are exactly one of them goes straight to its endpoint (found
    in the same route table), as Starlette's Route would call it, skipping the error and
    exception middleware, the router's scan and their wrappers around `send` (about 3 % of a token
    exchange's CPU). What those layers would do for it is done here: an HTTPException gets the
    app's HTTP error answer; any other exception is logged and answered 500 by the app's handler
    and raised on to the server, as Starlette's ServerErrorMiddleware does. Everything else,
    HEAD included, takes Starlette's way."""

    def __init__(self, *args, direct: dict, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._direct = direct

    async def __call__(self, scope, receive, send) -> None:
        endpoint = self._direct.get((scope.get("method"), scope.get("path"))) if scope["type"] == "http" else None
        if endpoint is None:
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self
        request = Request(scope, receive, send)
        try:
            response = await endpoint(request)
        except HTTPException as exc:
            response = await self.exception_handlers[HTTPException](request, exc)
        except Exception as exc:
            await (await self.exception_handlers[Exception](request, exc))(scope, receive, send)
            raise
        await response(scope, receive, send)


def _direct(routes: list, prefix: str) -> dict:
    return {
        (method, prefix + route.path): route.endpoint
        for route in routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if (method, route.path) in HOT_ROUTES
    }


def _routes(ctx) -> list:
    records = RecordsAPI(ctx.validator, ctx.store)
    return [
        Route("/.well-known/openid-configuration", resources.make_discovery(ctx), methods=["GET"]),
        Route("/oauth/authorize", authorize.authorize, methods=["GET", "POST"]),
        Route("/oauth/token", token.token, methods=["POST"]),
        Route("/oauth/token", token.token_preflight, methods=["OPTIONS"]),
        Route("/oauth/jwks", resources.jwks, methods=["GET"]),
        Route("/oauth/userinfo", resources.userinfo, methods=["GET", "POST"]),
        Route("/oauth/revoke", resources.revoke, methods=["POST"]),
        Route("/oauth/introspect", resources.introspect, methods=["POST"]),
        Route("/login", pages.login_get, methods=["GET"]),
        Route("/login", pages.login_post, methods=["POST"]),
        Route("/consent", pages.consent_get, methods=["GET"]),
        Route("/consent", pages.consent_post, methods=["POST"]),
        Route("/logout", pages.logout_get, methods=["GET"]),
        Route("/logout", pages.logout_post, methods=["POST"]),
        Route("/records/v1/grades", records.grades_endpoint, methods=["GET"]),
        Route("/", pages.home, methods=["GET"]),
        *portal.routes(),
        *admin.routes(),
        Mount("/api/v1", app=create_api(ctx)),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]


def create_app(settings: Settings, store: Store | None = None) -> IdentityProvider:
    store = store or open_store(settings.database_url, settings.data_dir)
    ctx = build_context(settings, store)

    def _relative(request: Request) -> str:
        path = request.url.path
        prefix = settings.issuer.path
        return path[len(prefix) :] if prefix and path.startswith(prefix) else path

    async def http_error(request: Request, exc: HTTPException) -> Response:
        headers = dict(exc.headers or {})
        if _relative(request).startswith(_JSON_PREFIXES):
            error = {404: "not_found", 405: "invalid_request"}.get(exc.status_code, "invalid_request")
            return json_response(
                {"error": error, "error_description": exc.detail},
                exc.status_code,
                {**headers, "Cache-Control": "no-store"},
            )
        page = error_page(
            ctx,
            exc.detail or "This page does not exist.",
            status=exc.status_code,
            title="Not found" if exc.status_code == 404 else "Request not allowed",
        )
        page.headers.update(headers)
        return page

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, _relative(request))
        if _relative(request).startswith(_JSON_PREFIXES):
            return json_response({"error": "server_error"}, 500, {"Cache-Control": "no-store"})
        return Response(
            "Something went wrong on our side. Please try again.", 500, media_type="text/plain", headers=PAGE_HEADERS
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        # The store's connections belong to the event loop that serves (PostgreSQL); the signing
        # keys are read now and kept fresh by a task of this loop.
        await store.start()
        refresher = None
        try:
            await ctx.keys.load()
            refresher = asyncio.create_task(ctx.keys.refresh_forever(), name="campusid-key-refresh")
            yield
        finally:
            if refresher is not None:
                refresher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await refresher
            await store.stop()

    routes = _routes(ctx)
    direct = _direct(routes, settings.issuer.path)
    # No trailing-slash redirects: Starlette would answer `/login/` with a 307 to a URL built from
    # the Host header, and a browser re-sends a POST's password to wherever a 307 points (RFC 9110
    # 15.4.8). A path with a slash too many is simply not found.
    if settings.issuer.path:
        routes = [Mount(settings.issuer.path, app=Router(routes, redirect_slashes=False))]
    app = IdentityProvider(
        routes=routes,
        exception_handlers={HTTPException: http_error, Exception: server_error},
        lifespan=lifespan,
        direct=direct,
    )
    app.router.redirect_slashes = False
    app.state.ctx = ctx
    return app
