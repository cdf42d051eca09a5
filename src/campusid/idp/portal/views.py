"""View models: turn service data into what templates show, and forms into service arguments.
Templates stay free of rules; the rules stay in the service."""

from __future__ import annotations

from campusid.idp import release
from campusid.idp.cas.registration import CASRegistration
from campusid.idp.cas.rules import services as cas_services
from campusid.idp.oidc.registration import OIDCRegistration
from campusid.idp.oidc.rules.redirect_uri import registration_problem
from campusid.idp.portal import labels

# Every grant type a review may grant, of every face: a form offers each (its face refuses the others').
GRANT_TYPES = (*OIDCRegistration.grant_types, *CASRegistration.grant_types)

MAX_URIS_FIELD = 20 * 2000


def history(events: list[dict]) -> list[dict]:
    """Newest first, with the actions' names (labels.py); feedback stays exactly as the reviewer wrote it."""
    return [{**e, "label": labels.action.get(e["action"], e["action"])} for e in reversed(events)]


def scope_rows(config: dict, granted: list[str] | None = None) -> list[dict]:
    reasons = config.get("justifications") or {}
    return [
        {
            "name": s,
            "description": release.DESCRIPTIONS.get(s, s),
            "sensitive": s in release.SENSITIVE,
            "justification": reasons.get(s, ""),
            "granted": granted is not None and s in granted,
        }
        for s in config.get("scopes", [])
    ]


def uri_checks(uris: list[str], app_type: str) -> list[dict]:
    """Each redirect URI against the registration rules (protocol/redirect_uri.py), as the reviewer sees it."""
    return [{"uri": u, "problem": registration_problem(u, app_type)} for u in uris]


def service_checks(services: list[str]) -> list[dict]:
    """Each CAS service URL against the service rule (cas/rules/services.py), as the reviewer sees it."""
    return [{"uri": u, "problem": cas_services.registration_problem(u)} for u in services]


def checks(config: dict, app_type: str) -> list[dict]:
    """What a reviewer sees checked: a CAS app's services, another app's redirect URIs."""
    if app_type == "cas":
        return service_checks(list(config.get("services") or ()))
    return uri_checks(list(config.get("redirect_uris") or ()), app_type)


def cas_release(scopes: list[str]) -> list[dict]:
    """The CAS attributes each scope releases (idp/release.py), as the reviewer sees them: every
    validation also carries authenticationDate, isFromNewLogin, longTermAuthenticationRequestTokenUsed."""
    return [
        {"scope": s, "attributes": [release.CAS_ATTRIBUTES[a] for a in release.ATTRIBUTES[s]]}
        for s in scopes
        if s in release.ATTRIBUTES
    ]


def scope_choices(selected: list[str], justifications: dict[str, str]) -> list[dict]:
    """Every known scope as a checkbox for the create / edit / change forms."""
    return [
        {
            "name": s,
            "field": f"scope.{s}",
            "why_field": f"why.{s}",
            "description": release.DESCRIPTIONS.get(s, s),
            "sensitive": s in release.SENSITIVE,
            "checked": s in selected or s == "openid",
            "justification": justifications.get(s, ""),
        }
        for s in release.ALL
    ]


def form_config(form: dict[str, str]) -> dict:
    """The app configuration a create / edit / change form describes (not yet validated)."""
    uris = [line.strip() for line in form.get("redirect_uris", "")[:MAX_URIS_FIELD].splitlines() if line.strip()]
    scopes = [s for s in release.ALL if form.get(f"scope.{s}") or s == "openid"]
    reasons = {s: form.get(f"why.{s}", "").strip() for s in release.SENSITIVE if s in scopes}
    sector = form.get("sector_identifier_uri", "").strip() or None
    return {
        "name": form.get("name", "").strip(),
        "description": form.get("description", "").strip(),
        "redirect_uris": uris,
        "scopes": scopes,
        "justifications": reasons,
        "sector_identifier_uri": sector,
        "grant_types": [g for g in GRANT_TYPES if form.get(f"grant_type.{g}")],
        "services": [line.strip() for line in form.get("services", "")[:MAX_URIS_FIELD].splitlines() if line.strip()],
        "post_logout_redirect_uris": [
            line.strip()
            for line in form.get("post_logout_redirect_uris", "")[:MAX_URIS_FIELD].splitlines()
            if line.strip()
        ],
        "backchannel_logout_uri": form.get("backchannel_logout_uri", "").strip() or None,
    }


def form_state(config: dict, app_type: str = "native") -> dict:
    """What the form template needs to show `config` (after a failed submit, or for editing)."""
    return {
        "name": config.get("name", ""),
        "description": config.get("description", ""),
        "type": app_type,
        "redirect_uris": "\n".join(config.get("redirect_uris", [])),
        "services": "\n".join(config.get("services") or []),
        "sector_identifier_uri": config.get("sector_identifier_uri") or "",
        "post_logout_redirect_uris": "\n".join(config.get("post_logout_redirect_uris") or []),
        "backchannel_logout_uri": config.get("backchannel_logout_uri") or "",
        "scopes": scope_choices(config.get("scopes", ["openid"]), config.get("justifications") or {}),
        "grant_types": [
            {"name": g, "field": f"grant_type.{g}", "checked": g in (config.get("grant_types") or ())}
            for g in GRANT_TYPES
        ],
    }
