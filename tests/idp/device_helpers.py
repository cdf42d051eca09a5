"""Helpers for the device authorization grant's tests: an app whose review granted it, the device's
requests, and a person deciding on the /device pages through the real HTML forms."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from campusid.idp.oidc.rules.device_grant import GRANT_TYPE
from tests.idp.helpers import PASSWORD, form_fields, make_user, run


def device_app(
    idp,
    client_id: str,
    *,
    client_type: str = "native",
    granted: bool = True,
    scopes: tuple[str, ...] = ("openid", "profile", "offline_access"),
) -> str | None:
    """An active app; its review granted the device grant when `granted`. Returns a web app's secret."""
    apps = idp.ctx.apps
    redirect = "http://127.0.0.1/callback" if client_type == "native" else "https://bot.example.edu/callback"

    async def create() -> str | None:
        _, secret = await apps.create(
            name=f"Bot {client_id}",
            app_type=client_type,
            redirect_uris=[redirect],
            scopes=list(scopes),
            owner="dev",
            client_id=client_id,
            grant_types=["device_code"],
        )
        await apps.submit(client_id)
        await apps.approve(client_id, by="admin", grant_types=["device_code"] if granted else None)
        await apps.activate(client_id)
        return secret

    if run(idp.store, idp.store.users.by_username("dev")) is None:
        make_user(idp.store, "dev", role="developer")
    if run(idp.store, idp.store.users.by_username("admin")) is None:
        make_user(idp.store, "admin", role="admin")
    return run(idp.store, create())


def start(
    http, client_id: str, secret: str | None = None, scope: str | None = "openid profile", **extra
) -> httpx.Response:
    """POST /oauth/device_authorization as the device: client_id, or Basic for a web app."""
    data = {**({"client_id": client_id} if secret is None else {}), **extra}
    if scope is not None:
        data["scope"] = scope
    auth = (client_id, secret) if secret is not None else None
    return http.post("/oauth/device_authorization", data=data, auth=auth)


def poll(http, client_id: str, device_code: str, secret: str | None = None) -> httpx.Response:
    data = {"grant_type": GRANT_TYPE, "device_code": device_code}
    if secret is None:
        data["client_id"] = client_id
    return http.post("/oauth/token", data=data, auth=(client_id, secret) if secret is not None else None)


def _absolute(base: str, location: str) -> str:
    if location.startswith("/"):
        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}{location}"
    return location


def enter_code(http, issuer: str, user_code: str) -> httpx.Response:
    """Open /device and submit `user_code` as typed; the answer to that submission."""
    r = http.get(f"{issuer}/device")
    assert r.status_code == 200, r.text[:300]
    action, fields = form_fields(r.text, "device-form")
    return http.post(_absolute(issuer, action), data={**fields, "user_code": user_code})


def decide(
    http, issuer: str, user_code: str, username: str = "alice", decision: str = "allow", password: str = PASSWORD
) -> httpx.Response:
    """A person enters the code on /device, signs in when asked and allows or denies on the
    consent page; returns the last page (the outcome, or whatever stopped the way)."""
    r = enter_code(http, issuer, user_code)
    for _ in range(6):
        if r.status_code == 303:
            r = http.get(_absolute(issuer, r.headers["location"]))
        elif r.status_code == 200 and 'id="login-form"' in r.text:
            action, fields = form_fields(r.text, "login-form")
            r = http.post(_absolute(issuer, action), data={**fields, "username": username, "password": password})
        elif r.status_code == 200 and 'id="consent-form"' in r.text:
            action, fields = form_fields(r.text, "consent-form")
            r = http.post(_absolute(issuer, action), data={**fields, "decision": decision})
        else:
            return r
    raise AssertionError("too many steps on the device pages")


def prepare(
    env: dict, client_id: str | None, *, people: tuple[tuple[str, str], ...], scopes: tuple[str, ...] = ()
) -> None:
    """The database of `env` (a served IdP's) with `people` ((username, role), password PASSWORD,
    named after the username) and, unless `client_id` is None, an active native app whose review
    granted the device grant, made in process: a `campusid` command per step would cost a process
    start each."""
    from pathlib import Path

    from campusid.idp.faces import app_service
    from campusid.idp.store import open_store

    store = open_store(env["CAMPUSID_DATABASE_URL"], Path(env["CAMPUSID_DATA_DIR"]))
    try:
        for username, role in people:
            make_user(store, username, role=role)
        if client_id is None:
            return
        apps = app_service(store)

        async def review() -> None:
            await apps.create(
                name="Lab Printer Bot",
                app_type="native",
                redirect_uris=["http://127.0.0.1/cb"],
                scopes=list(scopes),
                owner="dev",
                client_id=client_id,
                grant_types=["device_code"],
            )
            await apps.submit(client_id)
            await apps.approve(client_id, by="admin", grant_types=["device_code"])
            await apps.activate(client_id)

        run(store, review())
    finally:
        store.close()
