"""The CAS face as the app sees it (idp/faces.py lists the faces): installed into a context, it
adds its services, registers what the sign-in core calls back (its sign-ins' continuation, its
logout notifier: wake the single logout sender), and gives the app its routes and its background
work. Apereo CAS Protocol 3.0.3; docs/cas.md."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.routing import Route

from campusid.idp.cas import login, logout, proxy, validate
from campusid.idp.cas.login import CASLoginContinuation
from campusid.idp.cas.services import NAME, CASServices, build, cas
from campusid.idp.context import Context

# What every CAS sign-in with a session runs: reached without the router (idp/app.py).
HOT = {("GET", "/cas/login"), ("GET", "/cas/p3/serviceValidate"), ("GET", "/cas/serviceValidate")}
_VALIDATE = ["GET", "POST"]


def install(ctx: Context) -> CASServices:
    """Add the face's services to `ctx`; its continuation (a /cas/login sign-in's) and its logout
    notifier (wake the single logout sender) to the core's registries."""
    services = ctx.faces[NAME] = build(ctx)
    ctx.continuations.register(CASLoginContinuation())
    ctx.logout.register(lambda ended: services.slo.wake())
    return services


def routes(ctx: Context) -> list[Route]:
    return [
        Route("/cas/login", login.cas_login, methods=["GET"]),
        Route("/cas/logout", logout.cas_logout, methods=["GET"]),
        Route("/cas/validate", validate.validate_endpoint, methods=_VALIDATE),
        Route("/cas/serviceValidate", validate.service_validate, methods=_VALIDATE),
        Route("/cas/proxyValidate", validate.proxy_validate, methods=_VALIDATE),
        Route("/cas/p3/serviceValidate", validate.p3_service_validate, methods=_VALIDATE),
        Route("/cas/p3/proxyValidate", validate.p3_proxy_validate, methods=_VALIDATE),
        Route("/cas/proxy", proxy.proxy, methods=["GET"]),
    ]


def background(ctx: Context) -> dict[str, Callable[[], Awaitable[None]]]:
    """Every worker drains the CAS single logout queue."""
    return {"campusid-cas-single-logout": cas(ctx).slo.run_forever}
