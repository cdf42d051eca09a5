"""Small validation rules shared by new apps and revisions."""

from __future__ import annotations

from collections.abc import Iterable

from campusid.idp.apps.errors import ValidationFailed
from campusid.idp.apps.states import GRANT_TYPES
from campusid.idp.protocol import scopes as scope_rules
from campusid.idp.protocol.logout import MAX_URIS, backchannel_uri_problem, post_logout_uri_problem

# What an admin picks when approving (sensitive scopes, grant types); None: the documented default.
Picked = list[str] | None


def _check_grant_types(grant_types: Iterable[str] | None) -> list[str]:
    """Known extra grant types, each once, in the order given."""
    out = list(dict.fromkeys(grant_types or ()))
    unknown = [g for g in out if g not in GRANT_TYPES]
    if unknown:
        raise ValidationFailed(f"unknown grant type(s): {', '.join(unknown)}; known: {', '.join(GRANT_TYPES)}")
    return out


def _check_justifications(scopes: list[str], justifications: dict[str, str]) -> dict[str, str]:
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


def _check_feedback(feedback: str | None) -> str:
    if not feedback or not feedback.strip():
        raise ValidationFailed("feedback is required when rejecting an application")
    if len(feedback) > 5000:
        raise ValidationFailed("feedback is at most 5000 characters")
    return feedback.strip()


def _check_post_logout_uris(app_type: str, uris: Iterable[str] | None) -> list[str]:
    """Registered post-logout redirect URIs, each once, in the order given (protocol/logout.py)."""
    out = list(dict.fromkeys(uris or ()))
    if len(out) > MAX_URIS:
        raise ValidationFailed(f"at most {MAX_URIS} post-logout redirect URIs")
    for uri in out:
        problem = post_logout_uri_problem(uri, app_type)
        if problem:
            raise ValidationFailed(f"post-logout redirect URI {uri!r} {problem}")
    return out


def _check_backchannel_uri(uri: str | None) -> str | None:
    """The back-channel logout URI, or None for none (an empty value clears it)."""
    if uri is None or not uri.strip():
        return None
    problem = backchannel_uri_problem(uri)
    if problem:
        raise ValidationFailed(f"back-channel logout URI {uri!r} {problem}")
    return uri
