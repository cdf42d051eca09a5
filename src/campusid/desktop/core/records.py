"""The records API client: GET {records_url}/grades with the session's access token."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from .errors import InsufficientScope, UpstreamError, UpstreamUnavailable

GRADE_FIELDS = ("course_code", "course_name", "term", "credits", "score", "grade_point")


class TokenRejected(Exception):
    """The records API answered 401: the access token is expired or revoked (refresh, then retry once)."""


@dataclass(frozen=True)
class GradesPayload:
    student_name: str | None
    grades: list[dict[str, Any]]


class RecordsClient:
    def __init__(self, records_url: str, http: httpx.Client | None = None, timeout: float = 15.0) -> None:
        self._url = records_url.rstrip("/") + "/grades"
        self._http = http or httpx.Client(timeout=timeout, follow_redirects=False)

    def fetch_grades(self, access_token: str) -> GradesPayload:
        try:
            response = self._http.get(
                self._url, headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"}
            )
        except httpx.TransportError as exc:
            raise UpstreamUnavailable(f"the records API is unreachable ({type(exc).__name__})") from None
        if response.status_code == 401:
            raise TokenRejected()
        if response.status_code == 403:
            raise InsufficientScope("the records API refused the token: grades.read is not granted")
        if response.status_code in (502, 503, 504):
            raise UpstreamUnavailable(f"the records API is unavailable (HTTP {response.status_code})")
        if response.status_code != 200:
            raise UpstreamError(f"the records API answered HTTP {response.status_code}")
        return _parse(response)

    def close(self) -> None:
        self._http.close()


def _parse(response: httpx.Response) -> GradesPayload:
    try:
        body = response.json()
    except ValueError:
        raise UpstreamError("the records API answered something that is not JSON") from None
    grades = body.get("grades") if isinstance(body, dict) else None
    if not isinstance(grades, list) or not all(isinstance(g, dict) for g in grades):
        raise UpstreamError("the records API answer has no list of grades")
    student = body.get("student") if isinstance(body.get("student"), dict) else {}
    name = student.get("name") if isinstance(student.get("name"), str) else None
    return GradesPayload(student_name=name, grades=grades)
