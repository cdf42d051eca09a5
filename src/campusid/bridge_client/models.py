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
class LoginResult:
    """``pending`` is true when ``wait=False`` started a sign-in (poll ``status()``)."""

    user_name: str | None = None
    expires_at: datetime | None = None
    reused: bool = False
    pending: bool = False

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> LoginResult:
        if data.get("pending"):
            return cls(pending=True)
        user = data.get("user") or {}
        return cls(user.get("name"), parse_time(data.get("expires_at")), bool(data.get("reused")))
