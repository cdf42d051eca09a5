"""The canonical ASCII issuer identifier, as the identity provider publishes it.

The rules live in :mod:`campusid.issuer`, shared with the campusid IdP so that both sides agree on
every character: https (http only on a loopback host), no query, fragment or user information,
an IDNA 2008 / UTS 46 ASCII host in lower case, no default port, no trailing slash.
"""

from __future__ import annotations

from campusid.issuer import IssuerError, parse_issuer

__all__ = ["IssuerError", "canonical_issuer"]


def canonical_issuer(issuer: str) -> str:
    """Return the canonical ASCII form of a configured issuer URL, or raise ``ValueError`` (an ``IssuerError``).

    Only the *configured* value is canonicalised. Values received from the network (metadata
    ``issuer``, ``iss`` parameter, ``iss`` claim) are compared with the result character for
    character (OpenID Connect Discovery 1.0 section 4.3, RFC 9207 section 2.4).
    """
    return parse_issuer(issuer).canonical
