"""The IdP's issuer: ``CAMPUSID_ISSUER`` read at start in the canonical form of :mod:`campusid.issuer`.

The rules are those that every relying party applies too (:mod:`campusid.issuer` is the one
implementation); this layer names the setting in its messages, so that the command line can say
what to fix before anything starts. The configured value may be an IDN (Unicode) form; every
protocol use (discovery, the ``iss`` claim, the RFC 9207 ``iss`` parameter, every validation) uses
:attr:`Issuer.canonical`, and :attr:`Issuer.display` is for people only.
"""

from __future__ import annotations

from campusid.issuer import Issuer, IssuerError, is_loopback_host, parse_issuer

__all__ = ["Issuer", "IssuerError", "canonical_issuer", "is_loopback_host"]

SETTING = "CAMPUSID_ISSUER"


def canonical_issuer(value: str) -> Issuer:
    """Parse and canonicalise the configured issuer, refusing anything that cannot be one."""
    if not (value or "").strip():
        raise IssuerError(f"{SETTING} is empty; set it to the public URL of this server")
    return parse_issuer(value, name=SETTING)
