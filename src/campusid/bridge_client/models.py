"""Typed results of the bridge's operations."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


def parse_time(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else None


@dataclass(frozen=True)
class Health:
    status: str
    api_version: str
    logged_in: bool


@dataclass(frozen=True)
class Grade:
    course_code: str
    course_name: str = ""
    term: str = ""
    credits: float = 0
    score: float | None = None
    grade_point: float | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grade:
        return cls(
            course_code=str(data.get("course_code", "")),
            course_name=str(data.get("course_name", "")),
            term=str(data.get("term", "")),
            credits=data.get("credits") or 0,
            score=data.get("score"),
            grade_point=data.get("grade_point"),
            raw=dict(data),
        )


@dataclass(frozen=True)
class GradeReport:
    grades: list[Grade]
    synced_at: datetime | None

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> GradeReport:
        return cls([Grade.from_dict(g) for g in data.get("grades", [])], parse_time(data.get("synced_at")))


@dataclass(frozen=True)
class DeviceLogin:
    """A sign-in without a browser on this machine (RFC 8628): tell the person to open
    ``verification_uri`` on their phone or computer and enter ``user_code`` before ``expires_at``."""

    verification_uri: str
    user_code: str
    expires_at: datetime | None
    verification_uri_complete: str | None = None

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> DeviceLogin:
        return cls(
            verification_uri=str(data.get("verification_uri", "")),
            user_code=str(data.get("user_code", "")),
            expires_at=parse_time(data.get("expires_at")),
            verification_uri_complete=data.get("verification_uri_complete"),
        )

    def message(self) -> str:
        """One line to send the person."""
        until = f" before {self.expires_at:%H:%M} UTC" if self.expires_at else ""
        return f"To sign in, open {self.verification_uri} and enter the code {self.user_code}{until}."


@dataclass(frozen=True)
class LoginResult:
    """``pending`` is true when a sign-in was started and goes on in the background (``wait=False``,
    or ``method="device"``, whose ``device`` says what the person must do); then call
    ``wait_for_login()`` or poll ``status()``. ``expires_at`` is the session's."""

    user_name: str | None = None
    expires_at: datetime | None = None
    reused: bool = False
    pending: bool = False
    device: DeviceLogin | None = None

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> LoginResult:
        if data.get("pending"):
            device = DeviceLogin.from_data(data) if data.get("method") == "device" else None
            return cls(pending=True, device=device)
        user = data.get("user") or {}
        return cls(user.get("name"), parse_time(data.get("expires_at")), bool(data.get("reused")))
