"""An app's OpenID Connect registration, checked as the OIDC face accepts it (the review rules of
web and native apps, each with its RFC): redirect URIs (RFC 8252 for native apps: a
private-use scheme in reverse-domain form or a loopback IP literal; https for web apps, http only on
loopback), the sector identifier URI a web app spanning several hosts needs (OIDC Core 8.1), the
logout URIs (RP-Initiated and Back-Channel Logout 1.0), and the grant types beyond the code flow a
review may grant (`device_code`, RFC 8628). Every app of this face asks for `openid` (OIDC Core
3.1.2.1: every app signs people in).
"""

from __future__ import annotations

from collections.abc import Iterable

from campusid.i18n import N_
from campusid.idp import release
from campusid.idp.apps.errors import ValidationFailed
from campusid.idp.apps.registrations import known_grant_types
from campusid.idp.oidc.rules.logout import MAX_URIS, backchannel_uri_problem, post_logout_uri_problem
from campusid.idp.oidc.rules.redirect_uri import registration_problem
from campusid.idp.oidc.rules.sector import web_hosts

MAX_REDIRECT_URIS = 20


class OIDCRegistration:
    types = ("web", "native")
    grant_types = ("device_code",)

    def bundles(self, requested: list[str]) -> list[str]:
        """The scopes an app asks for, each once, with openid first when it was left out."""
        out = release.parse(" ".join(requested))
        if "openid" not in out:
            out.insert(0, "openid")
        return out

    def check(
        self,
        app_type: str,
        *,
        redirect_uris: list[str],
        sector_identifier_uri: str | None = None,
        post_logout_redirect_uris: Iterable[str] | None = (),
        backchannel_logout_uri: str | None = None,
        grant_types: Iterable[str] | None = (),
    ) -> dict:
        redirect_uris = list(dict.fromkeys(redirect_uris))
        if not redirect_uris:
            raise ValidationFailed(N_("at least one redirect URI is required"))
        if len(redirect_uris) > MAX_REDIRECT_URIS:
            raise ValidationFailed(N_("at most %(max)s redirect URIs", max=MAX_REDIRECT_URIS))
        for uri in redirect_uris:
            problem = registration_problem(uri, app_type)
            if problem:
                raise ValidationFailed(N_("redirect URI %(uri)r %(problem)s", uri=uri, problem=problem))
        if sector_identifier_uri is not None and (
            not sector_identifier_uri.startswith("https://") or registration_problem(sector_identifier_uri, "web")
        ):
            raise ValidationFailed(N_("sector_identifier_uri must be an https URL (OIDC Core 8.1)"))
        if app_type == "web" and sector_identifier_uri is None and len(web_hosts(redirect_uris)) > 1:
            raise ValidationFailed(
                N_("redirect URIs span several hosts: register a sector_identifier_uri (OIDC Core 8.1)")
            )
        return {
            "redirect_uris": redirect_uris,
            "sector_identifier_uri": sector_identifier_uri,
            "post_logout_redirect_uris": self._post_logout_uris(app_type, post_logout_redirect_uris),
            "backchannel_logout_uri": self._backchannel_uri(backchannel_logout_uri),
            "grant_types": self.check_grant_types(grant_types),
        }

    def check_grant_types(self, grant_types: Iterable[str] | None) -> list[str]:
        return known_grant_types(self.grant_types, grant_types)

    @staticmethod
    def _post_logout_uris(app_type: str, uris: Iterable[str] | None) -> list[str]:
        """Registered post-logout redirect URIs, each once, in the order given (rules/logout.py)."""
        out = list(dict.fromkeys(uris or ()))
        if len(out) > MAX_URIS:
            raise ValidationFailed(N_("at most %(max)s post-logout redirect URIs", max=MAX_URIS))
        for uri in out:
            problem = post_logout_uri_problem(uri, app_type)
            if problem:
                raise ValidationFailed(N_("post-logout redirect URI %(uri)r %(problem)s", uri=uri, problem=problem))
        return out

    @staticmethod
    def _backchannel_uri(uri: str | None) -> str | None:
        """The back-channel logout URI, or None for none (an empty value clears it)."""
        if uri is None or not uri.strip():
            return None
        problem = backchannel_uri_problem(uri)
        if problem:
            raise ValidationFailed(N_("back-channel logout URI %(uri)r %(problem)s", uri=uri, problem=problem))
        return uri
