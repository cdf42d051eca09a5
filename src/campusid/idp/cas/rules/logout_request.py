"""CAS single logout's message (Apereo CAS Protocol 3.0.3 2.3.3, Appendix C): a SAML 2.0
`samlp:LogoutRequest` (SAML 2.0 Core 3.7.1) with ID, Version 2.0, IssueInstant, `saml:NameID` (the
username) and `samlp:SessionIndex` (the service ticket the app validated, which it keyed its own
session by), POSTed to the service as the form field `logoutRequest`. Unsigned, as CAS sends it."""

from __future__ import annotations

import secrets
import time

from campusid.idp.cas.rules.responses import xml_text
from campusid.idp.cas.rules.tickets import ALPHABET

PROTOCOL = "urn:oasis:names:tc:SAML:2.0:protocol"
ASSERTION = "urn:oasis:names:tc:SAML:2.0:assertion"
FIELD = "logoutRequest"


def instant(at: float) -> str:
    """A SAML dateTime in UTC (SAML 2.0 Core 1.3.3: no fractional seconds needed, a trailing Z)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def logout_request(username: str, ticket: str, now: float) -> str:
    """The LogoutRequest for the session that `ticket` started at an app; a fresh ID each time
    (an xs:ID must begin with a letter: SAML 2.0 Core 1.3.4)."""
    request_id = "LR-" + "".join(secrets.choice(ALPHABET) for _ in range(32))
    return (
        f'<samlp:LogoutRequest xmlns:samlp="{PROTOCOL}" xmlns:saml="{ASSERTION}" '
        f'ID="{request_id}" Version="2.0" IssueInstant="{instant(now)}">'
        f"<saml:NameID>{xml_text(username)}</saml:NameID>"
        f"<samlp:SessionIndex>{xml_text(ticket)}</samlp:SessionIndex>"
        "</samlp:LogoutRequest>"
    )
