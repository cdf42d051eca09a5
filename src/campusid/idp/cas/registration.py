"""A CAS app's registration, checked as the CAS face accepts it (Apereo CAS Protocol 3.0.3 and
docs/cas.md): its service URLs (each an https prefix, http only on loopback, without query,
fragment, user information or dot segments: rules/services.py), kept in their canonical form, and
the grant type beyond service tickets a review may grant (`cas_proxy`: proxy-granting tickets,
CAS 3.0 2.5.4). Its bundles are those a CAS validation can release (profile, email,
student_number); `openid` means nothing to CAS and is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable

from campusid.i18n import N_
from campusid.idp import release
from campusid.idp.apps.errors import ValidationFailed
from campusid.idp.apps.registrations import known_grant_types
from campusid.idp.cas.rules.services import canonical, registration_problem

MAX_SERVICES = 20
CAS_BUNDLES = tuple(release.ATTRIBUTES)  # the bundles that release attributes: profile, email, student_number


class CASRegistration:
    types = ("cas",)
    grant_types = ("cas_proxy",)

    def bundles(self, requested: list[str]) -> list[str]:
        """The scopes a CAS app asks for, each once; `openid` is dropped, and a scope that releases
        nothing through CAS (offline_access, grades.read) is refused."""
        out = [s for s in release.parse(" ".join(requested)) if s != "openid"]
        useless = [s for s in out if s in release.ALL and s not in CAS_BUNDLES]
        if useless:
            raise ValidationFailed(
                N_(
                    "a CAS app cannot use the scope(s) %(scopes)s; CAS releases %(released)s",
                    scopes=", ".join(useless),
                    released=", ".join(CAS_BUNDLES),
                )
            )
        return out

    def check(self, app_type: str, *, services: list[str], grant_types: Iterable[str] | None = ()) -> dict:
        wanted = list(dict.fromkeys(services))
        if not wanted:
            raise ValidationFailed(N_("at least one service URL is required (--service)"))
        if len(wanted) > MAX_SERVICES:
            raise ValidationFailed(N_("at most %(max)s service URLs", max=MAX_SERVICES))
        for service in wanted:
            problem = registration_problem(service)
            if problem:
                raise ValidationFailed(N_("service %(service)r %(problem)s", service=service, problem=problem))
        return {
            "services": list(dict.fromkeys(canonical(s) for s in wanted)),
            "grant_types": self.check_grant_types(grant_types),
        }

    def check_grant_types(self, grant_types: Iterable[str] | None) -> list[str]:
        return known_grant_types(self.grant_types, grant_types)
