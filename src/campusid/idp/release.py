"""One release map: what an app may receive about a person, for every face.

An app's review approves *bundles* (the scopes it asked for: ordinary ones are granted on request,
sensitive ones only by review). Each bundle releases a fixed set of a person's attributes
(`ATTRIBUTES`); each face then names the released attributes in its own protocol. What a
party receives is decided in three steps, the same for every face:

    the person's attributes  ->  released(person, granted bundles)  ->  the face's names
                                                                         OIDC: OIDC_CLAIMS (userinfo)
                                                                         CAS: cas:attributes (12)
                                                                         SAML: Attribute names (13)

so that CAS's `displayName`/`mail`/`studentNumber` and SAML's `urn:oid:…` names are a table
each here, beside OIDC's, and no face decides what a bundle means. Subjects are pairwise:
`PairwiseSubjects.sub(sector, user_id)` is the one function every face calls, with the sector
its protocol defines (OIDC: the client's sector, oidc/rules/sector.py; SAML: the SP's entityID).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from typing import Any

from campusid.i18n import N_
from campusid.idp.crypto import b64url, derive_key

ORDINARY = ("openid", "profile", "email", "offline_access")
SENSITIVE = ("student_number", "grades.read")
ALL = ORDINARY + SENSITIVE

# The person's attributes each bundle releases, in the order they are released. `openid` and
# `offline_access` release none (a subject; a refresh token); `grades.read` opens the records API.
ATTRIBUTES = {
    "profile": ("name", "given_name", "family_name"),
    "email": ("email",),
    "student_number": ("student_number",),
}
# OpenID Connect Core 5.1 and 5.4: the standard claims, and campusid's `student_number`.
OIDC_CLAIMS = {
    "name": "name",
    "given_name": "given_name",
    "family_name": "family_name",
    "email": "email",
    "student_number": "student_number",
}

# Apereo CAS Protocol 3.0.3 (cas:attributes): the names campus apps behind mod_auth_cas, phpCAS
# and the Java client read, camelCase (Apache drops request headers whose names hold "_").
CAS_ATTRIBUTES = {
    "name": "displayName",
    "given_name": "givenName",
    "family_name": "sn",
    "email": "mail",
    "student_number": "studentNumber",
}

# What the consent page and the consoles say each bundle gives (marked: shown in the reader's language).
DESCRIPTIONS = {
    "openid": N_("Sign you in"),
    "profile": N_("Your name"),
    "email": N_("Your e-mail address"),
    "offline_access": N_("Stay signed in when you are not using it"),
    "student_number": N_("Your student number"),
    "grades.read": N_("Read your grades"),
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


def released(person: Any, bundles: Iterable[str]) -> dict[str, str]:
    """The attributes of `person` (any object with the attribute names: a user, a token's subject)
    that `bundles` release, each only where the person has a value, in bundle order."""
    out: dict[str, str] = {}
    granted = set(bundles)
    for bundle, names in ATTRIBUTES.items():
        if bundle in granted:
            for name in names:
                value = getattr(person, name, None)
                if value is not None:
                    out[name] = value
    return out


def oidc_claims(person: Any, bundles: Iterable[str]) -> dict[str, str]:
    """The claims userinfo releases for `bundles` (OIDC Core 5.4)."""
    return {OIDC_CLAIMS[name]: value for name, value in released(person, bundles).items()}


def cas_attributes(person: Any, bundles: Iterable[str]) -> dict[str, str]:
    """The attributes a CAS validation releases for `bundles`, by their CAS names."""
    return {CAS_ATTRIBUTES[name]: value for name, value in released(person, bundles).items()}


class PairwiseSubjects:
    """Pairwise subject identifiers (OIDC Core 8.1; SAML's pairwise-id): one per sector and person,
    `base64url(HMAC-SHA256(key, sector || "|" || user_id))` with the key derived from
    CAMPUSID_SECRET_KEY. The student number is never an input, so it never appears in a subject."""

    def __init__(self, secret_key: str) -> None:
        self._key = derive_key(secret_key, "campusid/pairwise-sub/v1")

    def sub(self, sector: str, user_id: str) -> str:
        mac = hmac.new(self._key, f"{sector}|{user_id}".encode(), hashlib.sha256).digest()
        return b64url(mac)


def grantable(requested: list[str], approved_sensitive: list[str] | None) -> list[str]:
    """What a reviewed app may ask for: its ordinary scopes, and the sensitive ones approved."""
    approved = set(approved_sensitive if approved_sensitive is not None else requested)
    return [s for s in requested if s in ORDINARY or (s in SENSITIVE and s in approved)]
