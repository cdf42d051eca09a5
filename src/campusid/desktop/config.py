"""Desktop configuration from the environment (the variables are listed in docs/configuration.md).

The issuer is put in the one canonical form that the IdP publishes (:mod:`campusid.issuer`), so the
desktop app compares discovery's ``issuer`` and the tokens' ``iss`` with what the IdP really sends
(OpenID Connect Discovery 1.0 section 4.3). A value that cannot be an issuer or a records URL is a
:class:`DesktopConfigError` at start, with a message that names the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import platformdirs

from campusid.issuer import MAX_LENGTH, IssuerError, parse_issuer

DEFAULT_ISSUER = "http://127.0.0.1:8000"
DEFAULT_CLIENT_ID = "campusid-desktop"
DESKTOP_SCOPE = "openid profile offline_access grades.read"
ISSUER_VARIABLE = "CAMPUSID_DESKTOP_ISSUER"
RECORDS_VARIABLE = "CAMPUSID_DESKTOP_RECORDS_URL"


class DesktopConfigError(ValueError):
    """A desktop setting cannot be used; the message names the variable and says what to change."""


@dataclass(frozen=True)
class DesktopSettings:
    """Where the IdP and the records API are, and where this machine keeps its data."""

    issuer: str = DEFAULT_ISSUER
    client_id: str = DEFAULT_CLIENT_ID
    records_url: str = DEFAULT_ISSUER + "/records/v1"
    data_dir: Path = Path(".")
    scope: str = DESKTOP_SCOPE

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> DesktopSettings:
        """Read the settings once; raises :class:`DesktopConfigError` on a bad issuer or records URL."""
        env = os.environ if environ is None else environ
        issuer = desktop_issuer(env.get(ISSUER_VARIABLE, DEFAULT_ISSUER))
        records_url = records_url_setting(env.get(RECORDS_VARIABLE), issuer)
        data_dir = env.get("CAMPUSID_DESKTOP_DATA_DIR") or platformdirs.user_data_dir("campusid-desktop")
        return cls(
            issuer=issuer,
            client_id=env.get("CAMPUSID_DESKTOP_CLIENT_ID", DEFAULT_CLIENT_ID),
            records_url=records_url,
            data_dir=Path(data_dir),
        )

    @property
    def records_audience(self) -> str:
        """The audience an access token must carry to be accepted by the records API: issuer + ``/records``."""
        return self.issuer + "/records"


def desktop_issuer(value: str) -> str:
    """The canonical issuer (ASCII host, no default port, no trailing slash), or :class:`DesktopConfigError`."""
    try:
        return parse_issuer(value, name=ISSUER_VARIABLE).canonical
    except IssuerError as exc:
        raise DesktopConfigError(str(exc)) from None


def records_url_setting(value: str | None, issuer: str) -> str:
    """The records API's base URL: issuer + ``/records/v1`` unless set to an absolute http(s) URL."""
    if value is None or not value.strip():
        return issuer + "/records/v1"
    value = value.strip()
    if len(value) > MAX_LENGTH:
        raise DesktopConfigError(f"{RECORDS_VARIABLE} is longer than {MAX_LENGTH} characters ({len(value)})")
    try:
        parts = urlsplit(value)
        _ = parts.port  # raises ValueError on a port that is not a number in range
    except ValueError as exc:
        raise DesktopConfigError(f"{RECORDS_VARIABLE} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DesktopConfigError(f"{RECORDS_VARIABLE} must be an absolute http(s) URL, for example {issuer}/records/v1")
    if parts.username is not None or parts.query or parts.fragment or any(c.isspace() for c in value):
        raise DesktopConfigError(f"{RECORDS_VARIABLE} must not hold user information, a query, a fragment or spaces")
    return value.rstrip("/")
