"""`create_app(settings)`: wires one independent OpenID Provider app; no work at import time."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles

from campusid import i18n
from campusid.i18n import N_
from campusid.idp import faces, metrics
from campusid.idp import housekeeping as upkeep
from campusid.idp.admin.routes import routes as admin_routes
from campusid.idp.api import create_api
from campusid.idp.context import build_context
from campusid.idp.error_layer import ErrorLayer, StoreOutageLog
from campusid.idp.oidc.services import oidc
from campusid.idp.pages import routes as shared_pages
from campusid.idp.portal.routes import routes as portal_routes
from campusid.idp.settings import Settings
from campusid.idp.store import Store, open_store
from campusid.idp.store.errors import StoreUnavailable
from campusid.idp.web import brand, health, language
from campusid.idp.web.http import NO_STORE, PAGE_HEADERS, json_response
from campusid.idp.web.observe import RequestLayer
from campusid.idp.web.render import error_page
from campusid.records.api import RecordsAPI

log = logging.getLogger("campusid.idp")
STATIC = Path(__file__).parent / "web" / "static"
_JSON_PREFIXES = ("/oauth/", "/records/", "/api/", "/.well-known/")
# What the error page says for the HTTP errors Starlette raises itself (its details are English).
_HTTP_ERRORS = {
    404: N_("This page does not exist."),
    405: N_("This page cannot be used that way."),
}


class IdentityProvider(Starlette):
    """Starlette with a direct way in for the hot routes (each face's HOT, and the login POST).

    A request whose method and path are exactly one of them goes straight to its endpoint (found
    in the same route table), as Starlette's Route would call it, skipping the exception
    middleware, the router's scan and their wrappers around `send`. It goes through the same
    ErrorLayer as every other request; an HTTPException gets the app's HTTP error answer, as the
    exception middleware would give it. Everything else, HEAD included, takes Starlette's way.
    Worth it: in-process, a hot request's dispatch costs 9.0 us of CPU this way against 17.4 us
    through the stack (a 401 from userinfo, median of 7 x 20,000), i.e. ~2.3 % of a token
    exchange and ~2.8 % of an SSO flow, which runs two hot requests."""

    def __init__(self, *args, direct: dict, errors: dict, observe: dict, **kwargs) -> None:
        super().__init__(*args, middleware=[Middleware(ErrorLayer, **errors)], **kwargs)
        self._direct = {key: Route(path, endpoint, methods=[key[0]]) for key, (path, endpoint) in direct.items()}
        self._direct_app = ErrorLayer(self._call_direct, **errors)
        # outermost, around both ways in: request id, the request's figure and log line
        self._observed = RequestLayer(self._dispatch, **observe)

    async def __call__(self, scope, receive, send) -> None:
        await self._observed(scope, receive, send)

    async def _dispatch(self, scope, receive, send) -> None:
        route = self._direct.get((scope.get("method"), scope.get("path"))) if scope["type"] == "http" else None
        if route is None:
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self
        scope["route"] = route  # as the router would set it: the error layer logs its template
        await self._direct_app(scope, receive, send)

    async def _call_direct(self, scope, receive, send) -> None:
        request = Request(scope, receive, send)
        try:
            response = await scope["route"].endpoint(request)
        except HTTPException as exc:
            response = await self.exception_handlers[HTTPException](request, exc)
        await response(scope, receive, send)


def _direct(routes: list, prefix: str) -> dict:
    """(method, full path) -> (route template, endpoint) of the hot routes in `routes`."""
    hot = faces.hot_routes() | shared_pages.HOT
    return {
        (method, prefix + route.path): (route.path, route.endpoint)
        for route in routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if (method, route.path) in hot
    }


def _api(ctx, errors: dict):
    """The management API, a FastAPI app with its own ServerErrorMiddleware (which re-raises after
    answering): the app's error layer goes inside it too, so nothing reaches that one either."""
    api = create_api(ctx)
    api.add_middleware(ErrorLayer, **errors)
    return api


def _routes(ctx, errors: dict) -> list:
    records = RecordsAPI(oidc(ctx).validator, ctx.store)
    return [
        *faces.routes(ctx),
        *shared_pages.routes(),
        Route("/records/v1/grades", records.grades_endpoint, methods=["GET"]),
        Route("/healthz", health.healthz, methods=["GET"]),
        Route("/readyz", health.readyz, methods=["GET"]),
        Route("/metrics", health.metrics_endpoint, methods=["GET"]),
        *brand.routes(ctx.settings.brand),
        *portal_routes(),
        *admin_routes(),
        Mount("/api/v1", app=_api(ctx, errors)),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]


def create_app(settings: Settings, store: Store | None = None, *, housekeeping: bool = False) -> IdentityProvider:
    store = store or open_store(settings.database_url, settings.data_dir)
    ctx = build_context(settings, store, faces.registrations())
    shared_pages.install(ctx)
    faces.install(ctx)

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
            request,
            _HTTP_ERRORS.get(exc.status_code, exc.detail or _HTTP_ERRORS[404]),
            status=exc.status_code,
            title=N_("Not found") if exc.status_code == 404 else N_("Request not allowed"),
        )
        page.headers.update(headers)
        return page

    async def failed(scope, exc: Exception) -> Response:
        """The answer to what escaped a handler (idp/error_layer.py): 503 and when to retry when
        the database cannot be reached, 500 otherwise; JSON on the protocol and API paths."""
        request = Request(scope)
        as_json = _relative(request).startswith(_JSON_PREFIXES)
        if isinstance(exc, StoreUnavailable):
            retry = {"Retry-After": str(int(exc.retry_after))}
            if as_json:
                body = {"error": "temporarily_unavailable", "error_description": "unavailable for now; retry later"}
                return json_response(body, 503, {**NO_STORE, **retry})
            message = N_("The service is temporarily unavailable. Please try again in a few seconds.")
            page = error_page(ctx, request, message, status=503, title=N_("Temporarily unavailable"))
            page.headers.update(retry)
            return page
        if as_json:
            return json_response({"error": "server_error"}, 500, {"Cache-Control": "no-store"})
        # Plain text, no template: whatever failed may have been the pages themselves.
        tr = i18n.translator(language.chosen(ctx, request))
        text = tr.gettext("Something went wrong on our side. Please try again.")
        return Response(text, 500, media_type="text/plain; charset=utf-8", headers=PAGE_HEADERS)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        # The store's connections belong to the event loop that serves (PostgreSQL); the signing
        # keys are read now and kept fresh by a task of this loop.
        await store.start()
        metrics.worker_started()
        tasks = []
        try:
            await ctx.keys.load()
            tasks.append(asyncio.create_task(ctx.keys.refresh_forever(), name="campusid-key-refresh"))
            # every worker does each face's background work (OIDC: the back-channel logout queue)
            for name, work in faces.background(ctx).items():
                tasks.append(asyncio.create_task(work(), name=name))
            if housekeeping and upkeep.wanted(settings):
                tasks.append(
                    asyncio.create_task(
                        upkeep.run_forever(store, ctx.keys, ctx.events, settings), name="campusid-housekeeping"
                    )
                )
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await store.stop()
            metrics.worker_stopped()
            if ctx.limiter is not None:
                await ctx.limiter.close()
            ctx.passwords.close()
            if ctx.directory is not None:
                ctx.directory.close()

    # one error layer's settings, used wherever a request can enter (see idp/error_layer.py)
    errors = {"answer": failed, "prefix": settings.issuer.path, "outage": StoreOutageLog(log)}
    routes = _routes(ctx, errors)
    direct = _direct(routes, settings.issuer.path)
    # No trailing-slash redirects: Starlette would answer `/login/` with a 307 to a URL built from
    # the Host header, and a browser re-sends a POST's password to wherever a 307 points (RFC 9110
    # 15.4.8). A path with a slash too many is simply not found.
    if settings.issuer.path:
        routes = [Mount(settings.issuer.path, app=Router(routes, redirect_slashes=False))]
    app = IdentityProvider(
        routes=routes,
        exception_handlers={HTTPException: http_error},
        lifespan=lifespan,
        direct=direct,
        errors=errors,
        observe={
            "trusted_proxies": settings.trusted_proxies,
            "prefix": settings.issuer.path,
            "request_lines": settings.log_format == "json",
            "figures": ctx.figures,
        },
    )
    app.router.redirect_slashes = False
    app.state.ctx = ctx
    return app
