"""An app's registration is its protocol's part (OIDC's: redirect URIs, sector, logout URIs, extra
grant types), and each face validates the registrations of its own app types. The review workflow
(apps/service.py) is the same for every type: it asks this registry which face registers an app's
type and lets that face check (and normalise) what the app registers.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Protocol

from campusid.i18n import N_
from campusid.idp.apps.errors import ValidationFailed


class Registration(Protocol):
    """A face's registrations: the app types it serves, the grant types beyond its default flow a
    review may grant, the bundles such an app asks for, and the check of what it registers."""

    types: tuple[str, ...]
    grant_types: tuple[str, ...]

    def bundles(self, requested: list[str]) -> list[str]:
        """The bundles (scopes) an app of this face asks for, from what it listed."""

    def check(self, app_type: str, **registered) -> dict:
        """What the app registers, checked and normalised (ValidationFailed says what is wrong)."""

    def check_grant_types(self, grant_types: Iterable[str] | None) -> list[str]:
        """Grant types an app may ask for or a review grant, each once, in the order given."""


class Registrations:
    """The faces' registrations of one app (or command), by app type."""

    def __init__(self, *faces: Registration) -> None:
        self._by_type: dict[str, Registration] = {}
        for face in faces:
            self.register(face)

    def register(self, face: Registration) -> None:
        for app_type in face.types:
            if app_type in self._by_type:
                raise ValueError(f"the app type {app_type!r} is registered by two faces")
            self._by_type[app_type] = face

    @property
    def types(self) -> tuple[str, ...]:
        return tuple(self._by_type)

    def of(self, app_type: str) -> Registration:
        face = self._by_type.get(app_type)
        if face is None:
            raise ValidationFailed(N_("type must be %(types)s", types=" or ".join(self.types) or "a registered type"))
        return face


def registration_args(face: Registration, app_type: str, given: dict) -> dict:
    """Of what a caller gave for an app (every face's fields: redirect URIs, services, …), what
    `face.check` takes; a non-empty value of a field the face does not know is refused (a CAS app
    has no redirect URIs, a web app no CAS services)."""
    accepted = inspect.signature(face.check).parameters
    out = {}
    for name, value in given.items():
        if name in accepted:
            out[name] = value
        elif value:
            raise ValidationFailed(N_("a %(type)s app has no %(field)s", type=app_type, field=name.replace("_", " ")))
    return out


def given_registration(
    *,
    redirect_uris=None,
    sector_identifier_uri=None,
    post_logout_redirect_uris=None,
    backchannel_logout_uri=None,
    grant_types=None,
    services=None,
) -> dict:
    """What a new app or a revision gives of every face's fields (absent lists empty), for
    `registration_args` to pass each face what it takes."""
    return {
        "redirect_uris": list(redirect_uris or ()),
        "sector_identifier_uri": sector_identifier_uri,
        "post_logout_redirect_uris": post_logout_redirect_uris,
        "backchannel_logout_uri": backchannel_logout_uri,
        "grant_types": grant_types,
        "services": list(services or ()),
    }


def known_grant_types(known: tuple[str, ...], grant_types: Iterable[str] | None) -> list[str]:
    """Grant types asked for or granted, each once in the order given; ValidationFailed names any
    that `known` (a face's) does not hold."""
    out = list(dict.fromkeys(grant_types or ()))
    unknown = [g for g in out if g not in known]
    if unknown:
        raise ValidationFailed(
            N_(
                "unknown grant type(s): %(unknown)s; known: %(known)s",
                unknown=", ".join(unknown),
                known=", ".join(known),
            )
        )
    return out
