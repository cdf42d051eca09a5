"""An app's registration is its protocol's part (OIDC's: redirect URIs, sector, logout URIs, extra
grant types), and each face validates the registrations of its own app types. The review workflow
(apps/service.py) is the same for every type: it asks this registry which face registers an app's
type and lets that face check (and normalise) what the app registers.
"""

from __future__ import annotations

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
