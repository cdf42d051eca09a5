"""Desktop configuration from the environment (DESIGN 4.1)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

DEFAULT_ISSUER = "http://127.0.0.1:8000"
DEFAULT_CLIENT_ID = "campusid-desktop"
DESKTOP_SCOPE = "openid profile offline_access grades.read"


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
        env = os.environ if environ is None else environ
        issuer = env.get("CAMPUSID_DESKTOP_ISSUER", DEFAULT_ISSUER).rstrip("/")
        records_url = env.get("CAMPUSID_DESKTOP_RECORDS_URL", issuer + "/records/v1").rstrip("/")
        data_dir = env.get("CAMPUSID_DESKTOP_DATA_DIR") or platformdirs.user_data_dir("campusid-desktop")
        return cls(
            issuer=issuer,
            client_id=env.get("CAMPUSID_DESKTOP_CLIENT_ID", DEFAULT_CLIENT_ID),
            records_url=records_url,
            data_dir=Path(data_dir),
        )

    @property
    def records_audience(self) -> str:
        """The audience an access token must carry to be accepted by the records API (DESIGN 3.4)."""
        return self.issuer + "/records"
