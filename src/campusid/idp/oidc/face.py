"""The OIDC face as the app sees it (idp/faces.py lists the faces): installed into a context, it
adds its services, registers what the sign-in core calls back (its sign-ins' continuations, its
logout notifier), and gives the app its routes and its background work."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.routing import Route

from campusid.idp.context import Context
from campusid.idp.oidc import authorize, device, device_authorization, logout, resources, token
from campusid.idp.oidc.authorize import AuthorizeContinuation
from campusid.idp.oidc.device import DeviceContinuation
from campusid.idp.oidc.services import NAME, OIDCServices, build, oidc

# The endpoints every code flow runs: reached without the router and middleware stack (idp/app.py).
HOT = {("GET", "/oauth/authorize"), ("POST", "/oauth/token"), ("GET", "/oauth/userinfo")}


def install(ctx: Context) -> OIDCServices:
    """Add the face's services to `ctx`; its sign-ins' continuations (an authorization request's,
    the device page's) and its logout notifier (wake the back-channel sender) to the core's registries."""
    services = ctx.faces[NAME] = build(ctx)
    ctx.continuations.register(AuthorizeContinuation())
    ctx.continuations.register(DeviceContinuation())
    ctx.logout.register(lambda ended: services.backchannel.wake())
    return services


def routes(ctx: Context) -> list[Route]:
    return [
        Route("/.well-known/openid-configuration", resources.make_discovery(ctx), methods=["GET"]),
        Route("/oauth/authorize", authorize.authorize, methods=["GET", "POST"]),
        Route("/oauth/token", token.token, methods=["POST"]),
        Route("/oauth/token", token.token_preflight, methods=["OPTIONS"]),
        Route("/oauth/device_authorization", device_authorization.device_authorization, methods=["POST"]),
        Route("/oauth/jwks", resources.jwks, methods=["GET"]),
        Route("/oauth/userinfo", resources.userinfo, methods=["GET", "POST"]),
        Route("/oauth/revoke", resources.revoke, methods=["POST"]),
        Route("/oauth/introspect", resources.introspect, methods=["POST"]),
        Route("/logout", logout.logout, methods=["GET", "POST"]),
        Route("/device", device.device_get, methods=["GET"]),
        Route("/device", device.device_post, methods=["POST"]),
    ]


def background(ctx: Context) -> dict[str, Callable[[], Awaitable[None]]]:
    """The face's work beside the requests, run by every worker: draining the back-channel logout queue."""
    return {"campusid-backchannel-logout": oidc(ctx).backchannel.run_forever}
