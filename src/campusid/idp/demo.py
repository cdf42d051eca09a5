"""Demo data for `campusid demo`: users, grades and two active clients, created idempotently
through the same services the CLI uses (so the account rules and the review workflow are
exercised for real)."""

from __future__ import annotations

import secrets
from importlib import resources

from campusid.idp import faces
from campusid.idp.accounts import add_user
from campusid.idp.apps import AppService
from campusid.idp.passwords import Passwords
from campusid.idp.store import Store
from campusid.records.importer import import_csv

DESKTOP_CLIENT = "campusid-desktop"
WEB_CLIENT = "campusid-web-demo"
WEB_CLIENT_PORT = 8001

USERS = [
    {
        "username": "alice",
        "name": "Alice Zhang",
        "given_name": "Alice",
        "family_name": "Zhang",
        "email": "alice@students.example.edu",
        "student_number": "2024001",
        "role": "student",
        "password": "alice-demo-password",
    },
    {
        "username": "bob",
        "name": "Bob Li",
        "given_name": "Bob",
        "family_name": "Li",
        "email": "bob@students.example.edu",
        "student_number": "2024002",
        "role": "student",
        "password": "bob-demo-password",
    },
    {
        "username": "dev",
        "name": "Dana Developer",
        "given_name": "Dana",
        "family_name": "Developer",
        "email": "dev@example.edu",
        "student_number": None,
        "role": "developer",
        "password": "dev-demo-password",
    },
    {
        "username": "admin",
        "name": "Ada Admin",
        "given_name": "Ada",
        "family_name": "Admin",
        "email": "admin@example.edu",
        "student_number": None,
        "role": "admin",
        "password": "admin-demo-password",
    },
]


async def _ensure_client(apps: AppService, store: Store, **spec) -> str | None:
    """Create, submit, approve and activate a demo client; returns a fresh secret for web clients."""
    client_id = spec["client_id"]
    if await store.apps.get(client_id) is None:
        await apps.create(**spec)
    state = (await apps.get(client_id)).state
    if state in ("draft", "rejected"):
        await apps.submit(client_id, actor=spec["owner"])
        state = "under_review"
    if state == "under_review":
        await apps.approve(client_id, by="admin", grant_types=spec.get("grant_types"))
        state = "approved"
    if state == "approved":
        await apps.activate(client_id, actor=spec["owner"])
    if state == "suspended":
        await apps.reinstate(client_id, by="admin")
    if spec["app_type"] == "web":
        return await apps.rotate_secret(client_id, actor="demo")
    return None


async def seed(store: Store, passwords: Passwords, issuer: str, now: int) -> dict:
    users_out = []
    for user in USERS:
        if await store.users.by_username(user["username"]) is None:
            await add_user(store, passwords, now=now, **user)
        users_out.append({k: user[k] for k in ("username", "password", "name", "role", "student_number")})
    data = resources.files("campusid.records").joinpath("demo_grades.csv").read_bytes()
    report = await import_csv(store, data)
    if not report.ok:  # pragma: no cover - the shipped file is valid
        raise RuntimeError(f"demo grades are invalid: {report.errors}")
    apps = faces.app_service(store)
    await _ensure_client(
        apps,
        store,
        client_id=DESKTOP_CLIENT,
        name="campusid Desktop",
        app_type="native",
        redirect_uris=["http://127.0.0.1/callback"],
        scopes=["openid", "profile", "offline_access", "grades.read"],
        owner="dev",
        description="The desktop app: grades on your computer and a local bridge for scripts.",
        # its bridge also signs in without a browser on the machine (bots, SSH sessions: RFC 8628)
        grant_types=["device_code"],
    )
    web_redirect = f"http://127.0.0.1:{WEB_CLIENT_PORT}/callback"
    secret = await _ensure_client(
        apps,
        store,
        client_id=WEB_CLIENT,
        name="My grades (web demo)",
        app_type="web",
        redirect_uris=[web_redirect],
        scopes=["openid", "profile", "grades.read"],
        owner="dev",
        description="A server-side web app that shows a student's grades.",
        # single logout: back to its home page after signing out here, and told when a session ends
        post_logout_redirect_uris=[f"http://127.0.0.1:{WEB_CLIENT_PORT}/"],
        backchannel_logout_uri=f"http://127.0.0.1:{WEB_CLIENT_PORT}/backchannel-logout",
    )
    return {
        "issuer": issuer,
        "users": users_out,
        "clients": [
            {"client_id": DESKTOP_CLIENT, "type": "native", "redirect_uris": ["http://127.0.0.1/callback"]},
            {"client_id": WEB_CLIENT, "client_secret": secret, "type": "web", "redirect_uris": [web_redirect]},
        ],
    }


def random_password() -> str:
    return secrets.token_urlsafe(12)
