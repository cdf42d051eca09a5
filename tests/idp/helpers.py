"""Helpers for IdP tests: an in-process app with users and clients, PKCE pairs, and a browser-like
login through the real HTML forms."""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import html
import re
import secrets
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx

from campusid.idp.apps import AppService
from campusid.idp.demo import add_user
from campusid.idp.passwords import Passwords
from campusid.idp.store import Store
from campusid.idp.store.rows import User

PASSWORD = "correct horse battery staple"


def run(store: Store, coro):
    """Run a coroutine of the async store from a test: on an event loop of its own, with the
    store's connections opened for it (as the CLI does)."""

    async def main():
        async with store:
            return await coro

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    # Called under a running loop (Playwright's sync API runs one): on a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as worker:
        return worker.submit(asyncio.run, main()).result()


class SyncStore:
    """The async methods of the store (or of a service over it, `target`), called from a test's
    synchronous code: `db.client("x")`, `apps.submit("x")`."""

    def __init__(self, store: Store, target=None) -> None:
        self._store = store
        self._target = target if target is not None else store

    def __getattr__(self, name: str):
        method = getattr(self._target, name)
        return lambda *args, **kwargs: run(self._store, method(*args, **kwargs))


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def make_user(
    store: Store, username: str, role: str = "student", student_number: str | None = None, name: str | None = None
) -> User:
    return run(
        store,
        add_user(
            store,
            Passwords(1, 8192, 1),
            username=username,
            name=name or username.title(),
            password=PASSWORD,
            role=role,
            student_number=student_number,
            now=int(time.time()),
        ),
    )


def active_client(
    store: Store,
    *,
    client_type: str,
    redirect_uris: list[str],
    scopes: list[str] | None = None,
    client_id: str | None = None,
    owner: str = "dev",
    admin: str = "admin",
    sector_identifier_uri: str | None = None,
) -> tuple[str, str | None]:
    apps = AppService(store)
    if run(store, store.user_by_username(owner)) is None:
        make_user(store, owner, role="developer")
    if run(store, store.user_by_username(admin)) is None:
        make_user(store, admin, role="admin")

    async def create_and_activate() -> tuple[str, str | None]:
        data, secret = await apps.create(
            name=f"{client_type} app",
            app_type=client_type,
            redirect_uris=redirect_uris,
            scopes=scopes or ["openid", "profile"],
            owner=owner,
            client_id=client_id,
            sector_identifier_uri=sector_identifier_uri,
        )
        cid = data["client_id"]
        await apps.submit(cid)
        await apps.approve(cid, by=admin)
        await apps.activate(cid)
        return cid, secret

    return run(store, create_and_activate())


def form_fields(page: str, form_id: str) -> tuple[str, dict[str, str]]:
    match = re.search(rf'<form id="{form_id}"[^>]*action="([^"]*)"(.*?)</form>', page, re.S)
    assert match, f"no form {form_id} in page"
    fields = {
        m.group(1): html.unescape(m.group(2))
        for m in re.finditer(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', match.group(2))
    }
    return html.unescape(match.group(1)), fields


@dataclass
class Flow:
    params: dict
    verifier: str


def auth_params(client_id: str, redirect_uri: str, scope: str = "openid profile", **extra) -> Flow:
    verifier, challenge = pkce_pair()
    params = {
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "response_type": "code",
        "scope": scope,
        "state": secrets.token_urlsafe(16),
        "nonce": secrets.token_urlsafe(16),
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        **extra,
    }
    return Flow({k: v for k, v in params.items() if v is not None}, verifier)


def code_exchange(flow: Flow, code: str, redirect_uri: str, client_id: str | None = None) -> dict[str, str]:
    """The token request's form for `code` from `flow` (RFC 6749 4.1.3 with the PKCE verifier); a
    public client names itself with `client_id`, a web client authenticates with Basic instead."""
    data = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    if client_id is not None:
        data["client_id"] = client_id
    data["code_verifier"] = flow.verifier
    return data


def callback_params(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def login_through_pages(
    client: httpx.Client, issuer: str, flow: Flow, username: str, password: str = PASSWORD, consent: str = "allow"
) -> dict[str, str]:
    """Drive authorize → login form → consent form → redirect like a browser; returns callback params."""
    origin = _origin(issuer)
    r = client.get(f"{issuer}/oauth/authorize?{urlencode(flow.params)}")
    for _ in range(8):
        assert r.status_code in (200, 302, 303), (r.status_code, r.text[:500])
        if r.status_code in (302, 303):
            location = r.headers["location"]
            if location.startswith("/"):
                location = origin + location
            if not location.startswith(issuer + "/"):
                return callback_params(location)
            r = client.get(location)
        elif 'id="login-form"' in r.text:
            action, fields = form_fields(r.text, "login-form")
            r = client.post(origin + action, data={**fields, "username": username, "password": password})
        elif 'id="consent-form"' in r.text:
            action, fields = form_fields(r.text, "consent-form")
            r = client.post(origin + action, data={**fields, "decision": consent})
        else:
            raise AssertionError(f"unexpected page {r.status_code}: {r.text[:500]}")
    raise AssertionError("too many steps")


def _origin(issuer: str) -> str:
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}"
