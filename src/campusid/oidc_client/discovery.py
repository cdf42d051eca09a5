"""Provider metadata (OpenID Connect Discovery 1.0 sections 3-4, RFC 8414 section 3)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from .errors import DiscoveryError

WELL_KNOWN_PATH = "/.well-known/openid-configuration"


@dataclass(frozen=True)
class ProviderMetadata:
    """The fields of the discovery document this library uses; everything else is in ``raw``."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str | None
    revocation_endpoint: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)
    device_authorization_endpoint: str | None = None

    @property
    def iss_parameter_supported(self) -> bool:
        """RFC 9207 section 3: the provider always sends ``iss`` in authorization responses."""
        return self.raw.get("authorization_response_iss_parameter_supported") is True

    @property
    def id_token_signing_alg_values_supported(self) -> list[str]:
        values = self.raw.get("id_token_signing_alg_values_supported")
        return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def discovery_url(canonical_issuer: str) -> str:
    """OpenID Connect Discovery 1.0 section 4.1: issuer + ``/.well-known/openid-configuration``."""
    return canonical_issuer + WELL_KNOWN_PATH


def _endpoint(doc: dict[str, Any], name: str, *, https_required: bool, required: bool) -> str | None:
    value = doc.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value:
        raise DiscoveryError(f"provider metadata lacks {name}")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise DiscoveryError(f"provider metadata {name} is not an absolute http(s) URL")
    if https_required and parts.scheme != "https":
        raise DiscoveryError(f"provider metadata {name} must use https (Discovery 1.0 section 3)")
    return value


def parse_metadata(response: httpx.Response, canonical_issuer: str) -> ProviderMetadata:
    """Validate a discovery response against the configured canonical issuer.

    OpenID Connect Discovery 1.0 section 4.3 (and RFC 8414 section 3.3): the ``issuer`` value
    MUST be identical to the issuer used to build the discovery URL. The comparison is exact,
    character for character; a Unicode (IDN) spelling of the same host is refused (campusid.issuer).
    """
    if response.status_code != 200:
        raise DiscoveryError(f"discovery answered HTTP {response.status_code}")
    try:
        doc = response.json()
    except ValueError:
        raise DiscoveryError("discovery document is not JSON") from None
    if not isinstance(doc, dict):
        raise DiscoveryError("discovery document is not a JSON object")
    if doc.get("issuer") != canonical_issuer:
        raise DiscoveryError(
            f"discovery issuer {doc.get('issuer')!r} is not the configured issuer {canonical_issuer!r}"
        )
    https_required = canonical_issuer.startswith("https://")
    methods = doc.get("code_challenge_methods_supported")
    if isinstance(methods, list) and "S256" not in methods:
        raise DiscoveryError("provider does not support PKCE S256 (RFC 7636 section 4.2)")
    return ProviderMetadata(
        issuer=canonical_issuer,
        authorization_endpoint=_endpoint(doc, "authorization_endpoint", https_required=https_required, required=True),
        token_endpoint=_endpoint(doc, "token_endpoint", https_required=https_required, required=True),
        jwks_uri=_endpoint(doc, "jwks_uri", https_required=https_required, required=True),
        userinfo_endpoint=_endpoint(doc, "userinfo_endpoint", https_required=https_required, required=False),
        revocation_endpoint=_endpoint(doc, "revocation_endpoint", https_required=https_required, required=False),
        raw=doc,
        device_authorization_endpoint=_endpoint(
            doc, "device_authorization_endpoint", https_required=https_required, required=False
        ),
    )
