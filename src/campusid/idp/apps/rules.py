"""The validation rules of an app, whatever its face, shared by new apps, edits and revisions: its
name, its bundles and their reasons, a rejection's feedback. Its registration is its face's to
check (apps/registrations.py)."""

from __future__ import annotations

from campusid.i18n import N_
from campusid.idp import release
from campusid.idp.apps.errors import ValidationFailed

# What an admin picks when approving (sensitive scopes, grant types); None: the documented default.
Picked = list[str] | None


def check_app(name: str, bundles: list[str]) -> None:
    """What every app must meet, whatever its face, new or changed: its name and the bundles it
    asks for (its registration is its face's to check: apps/registrations.py)."""
    if not name or not name.strip() or len(name) > 200:
        raise ValidationFailed(N_("name must be 1 to 200 characters"))
    bad = release.unknown(bundles)
    if bad:
        raise ValidationFailed(
            N_("unknown scope(s): %(bad)s; known: %(known)s", bad=", ".join(bad), known=", ".join(release.ALL))
        )


def check_justifications(scopes: list[str], justifications: dict[str, str]) -> dict[str, str]:
    """Every requested sensitive scope needs a reason a reviewer can weigh."""
    out = {}
    for scope in scopes:
        if scope in release.SENSITIVE:
            reason = (justifications.get(scope) or "").strip()
            if not reason:
                raise ValidationFailed(N_("explain why the app needs the sensitive scope %(scope)s", scope=scope))
            if len(reason) > 2000:
                raise ValidationFailed(N_("the reason for %(scope)s is at most 2000 characters", scope=scope))
            out[scope] = reason
    return out


def check_feedback(feedback: str | None) -> str:
    if not feedback or not feedback.strip():
        raise ValidationFailed(N_("feedback is required when rejecting an application"))
    if len(feedback) > 5000:
        raise ValidationFailed(N_("feedback is at most 5000 characters"))
    return feedback.strip()
