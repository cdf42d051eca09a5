"""The validation rules of an app's configuration, shared by new apps, edits and revisions."""

from __future__ import annotations

from collections.abc import Iterable

from campusid.idp.apps.errors import ValidationFailed
from campusid.idp.apps.states import GRANT_TYPES, TYPES
from campusid.idp.protocol import scopes as scope_rules
from campusid.idp.protocol.logout import MAX_URIS, backchannel_uri_problem, post_logout_uri_problem
from campusid.idp.protocol.pairwise import web_hosts
from campusid.idp.protocol.redirect_uri import registration_problem

# What an admin picks when approving (sensitive scopes, grant types); None: the documented default.
Picked = list[str] | None


def requested_scopes(scopes: Iterable[str]) -> list[str]:
    """The scopes an app asks for, each once, with openid first when it was left out: every app
    signs people in (OpenID Connect Core 1.0 section 3.1.2.1)."""
    requested = scope_rules.parse(" ".join(scopes))
    if "openid" not in requested:
        requested.insert(0, "openid")
    return requested


def check_config(
    app_type: str, name: str, redirect_uris: list[str], requested: list[str], sector_identifier_uri: str | None
) -> None:
    """What every configuration of an app must meet, new or changed: its type, name, redirect
    URIs, scopes and sector identifier URI (OIDC Core 8.1)."""
    if app_type not in TYPES:
        raise ValidationFailed("type must be web or native")
    if not name or not name.strip() or len(name) > 200:
        raise ValidationFailed("name must be 1 to 200 characters")
    if not redirect_uris:
        raise ValidationFailed("at least one redirect URI is required")
    if len(redirect_uris) > 20:
        raise ValidationFailed("at most 20 redirect URIs")
    for uri in redirect_uris:
        problem = registration_problem(uri, app_type)
        if problem:
            raise ValidationFailed(f"redirect URI {uri!r} {problem}")
    bad = scope_rules.unknown(requested)
    if bad:
        raise ValidationFailed(f"unknown scope(s): {', '.join(bad)}; known: {', '.join(scope_rules.ALL)}")
    if sector_identifier_uri is not None and (
        not sector_identifier_uri.startswith("https://") or registration_problem(sector_identifier_uri, "web")
    ):
        raise ValidationFailed("sector_identifier_uri must be an https URL (OIDC Core 8.1)")
    if app_type == "web" and sector_identifier_uri is None and len(web_hosts(redirect_uris)) > 1:
        raise ValidationFailed("redirect URIs span several hosts: register a sector_identifier_uri (OIDC Core 8.1)")


def check_grant_types(grant_types: Iterable[str] | None) -> list[str]:
    """Known extra grant types, each once, in the order given."""
    out = list(dict.fromkeys(grant_types or ()))
    unknown = [g for g in out if g not in GRANT_TYPES]
    if unknown:
        raise ValidationFailed(f"unknown grant type(s): {', '.join(unknown)}; known: {', '.join(GRANT_TYPES)}")
    return out


def check_justifications(scopes: list[str], justifications: dict[str, str]) -> dict[str, str]:
    """Every requested sensitive scope needs a reason a reviewer can weigh."""
    out = {}
    for scope in scopes:
        if scope in scope_rules.SENSITIVE:
            reason = (justifications.get(scope) or "").strip()
            if not reason:
                raise ValidationFailed(f"explain why the app needs the sensitive scope {scope}")
            if len(reason) > 2000:
                raise ValidationFailed(f"the reason for {scope} is at most 2000 characters")
            out[scope] = reason
    return out


def check_feedback(feedback: str | None) -> str:
    if not feedback or not feedback.strip():
        raise ValidationFailed("feedback is required when rejecting an application")
    if len(feedback) > 5000:
        raise ValidationFailed("feedback is at most 5000 characters")
    return feedback.strip()


def check_post_logout_uris(app_type: str, uris: Iterable[str] | None) -> list[str]:
    """Registered post-logout redirect URIs, each once, in the order given (protocol/logout.py)."""
    out = list(dict.fromkeys(uris or ()))
    if len(out) > MAX_URIS:
        raise ValidationFailed(f"at most {MAX_URIS} post-logout redirect URIs")
    for uri in out:
        problem = post_logout_uri_problem(uri, app_type)
        if problem:
            raise ValidationFailed(f"post-logout redirect URI {uri!r} {problem}")
    return out


def check_backchannel_uri(uri: str | None) -> str | None:
    """The back-channel logout URI, or None for none (an empty value clears it)."""
    if uri is None or not uri.strip():
        return None
    problem = backchannel_uri_problem(uri)
    if problem:
        raise ValidationFailed(f"back-channel logout URI {uri!r} {problem}")
    return uri
