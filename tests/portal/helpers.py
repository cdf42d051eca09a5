"""Helpers for portal, console and API tests: sign in through the IdP's own login page, read
CSRF tokens from the forms, and snapshot an app's state and audit log."""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

from tests.idp.helpers import post_login

XSS = "<script>alert(1)</script>\"'><img src=x onerror=alert(1)>"
XSS_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&#34;&#39;&gt;&lt;img src=x onerror=alert(1)&gt;"
if TYPE_CHECKING:
    from starlette.testclient import TestClient

NATIVE_URI = "http://127.0.0.1/callback"


def sign_in(idp, username: str, next_path: str = "/developer", **headers) -> TestClient:
    """A browser-like client signed in through GET /login?next=… and the login form."""
    client = idp.client(headers=headers)
    r = post_login(client, username, next_path=next_path)
    assert r.status_code == 303 and r.headers["location"] == next_path, (r.status_code, r.text[:300])
    return client


def csrf_in(page: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert match, "no CSRF input in page"
    return html.unescape(match.group(1))


def portal_csrf(client: TestClient) -> str:
    return csrf_in(client.get("/developer/apps/new").text)


def admin_csrf(client: TestClient) -> str:
    return csrf_in(client.get("/admin/users").text)


def api_token(client: TestClient) -> str:
    return client.get("/api/v1/me").json()["csrf_token"]


def snapshot(idp, client_id: str) -> tuple[dict, list[dict]]:
    """The app row and its audit log, to show that a refused request changed nothing."""
    return idp.db.apps.get(client_id), idp.db.apps.events(client_id)


def new_app_form(csrf: str, name: str = "Timetable", uris: str = NATIVE_URI, app_type: str = "native", **extra) -> dict:
    return {
        "csrf_token": csrf,
        "name": name,
        "description": "Shows a student's timetable",
        "type": app_type,
        "redirect_uris": uris,
        "scope.profile": "on",
        **extra,
    }
