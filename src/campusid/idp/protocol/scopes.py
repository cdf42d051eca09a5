"""Scopes (RFC 6749 3.3): ordinary ones are granted on request; sensitive ones only by review."""

from __future__ import annotations

ORDINARY = ("openid", "profile", "email", "offline_access")
SENSITIVE = ("student_number", "grades.read")
ALL = ORDINARY + SENSITIVE

CLAIMS_BY_SCOPE = {
    "openid": ("sub",),
    "profile": ("name", "given_name", "family_name"),
    "email": ("email",),
    "student_number": ("student_number",),
}

DESCRIPTIONS = {
    "openid": "Sign you in",
    "profile": "Your name",
    "email": "Your e-mail address",
    "offline_access": "Stay signed in when you are not using it",
    "student_number": "Your student number",
    "grades.read": "Read your grades",
}


def parse(scope: str | None) -> list[str]:
    """Space-delimited, order kept, duplicates dropped (RFC 6749 3.3)."""
    out: list[str] = []
    for item in (scope or "").split(" "):
        if item and item not in out:
            out.append(item)
    return out


def unknown(scopes: list[str]) -> list[str]:
    return [s for s in scopes if s not in ALL]


def grantable(requested: list[str], approved_sensitive: list[str] | None) -> list[str]:
    """What a reviewed app may ask for: its ordinary scopes, and the sensitive ones approved."""
    approved = set(approved_sensitive if approved_sensitive is not None else requested)
    out = [s for s in requested if s in ORDINARY or (s in SENSITIVE and s in approved)]
    if "openid" not in out:
        out.insert(0, "openid")
    return out
