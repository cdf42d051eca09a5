"""The protocol faces this IdP speaks, side by side over the one sign-in core (idp/signin).

Each face is a package of its own (OIDC: idp/oidc). Its `face` module offers `install(ctx)` (its
services, and what the core calls back: its sign-ins' continuations, its logout notifier),
`routes(ctx)`, `HOT` (the routes every flow of it runs, reached without the router) and
`background(ctx)` (work beside the requests); its `registration` module checks its apps'
registrations (apps/registrations.py). No face imports another; the app (idp/app.py), the demo
and the CLI compose them through the two lists here. The registrations are listed apart so that
a command that checks an app loads none of the endpoints.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import TYPE_CHECKING

from campusid.idp.apps import AppService
from campusid.idp.apps.registrations import Registrations

if TYPE_CHECKING:  # the CLI imports this module to check apps, and nothing of the web
    from starlette.routing import Route

    from campusid.idp.context import Context


def _faces() -> tuple[ModuleType, ...]:
    from campusid.idp.cas import face as cas
    from campusid.idp.oidc import face as oidc

    return (oidc, cas)


def registrations() -> Registrations:
    """Which face checks the registration of each app type (OIDC: web and native; CAS: cas)."""
    from campusid.idp.cas.registration import CASRegistration
    from campusid.idp.oidc.registration import OIDCRegistration

    return Registrations(OIDCRegistration(), CASRegistration())


def app_service(store, events=None) -> AppService:
    """The review workflow over `store`, its apps' registrations checked by their faces (the CLI's
    and the demo's; an app's context has its own, made the same way)."""
    return AppService(store, events, registrations())


def install(ctx: Context) -> None:
    for face in _faces():
        face.install(ctx)


def routes(ctx: Context) -> list[Route]:
    return [route for face in _faces() for route in face.routes(ctx)]


def hot_routes() -> set[tuple[str, str]]:
    return set().union(*(face.HOT for face in _faces()))


def background(ctx: Context) -> dict[str, Callable[[], Awaitable[None]]]:
    return {name: work for face in _faces() for name, work in face.background(ctx).items()}
