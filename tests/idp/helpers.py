"""Helpers for IdP tests: an in-process app with users and clients, PKCE pairs, a clock the test
moves, and a browser-like sign-in through the real HTML forms (the login page, the second factor,
consent) for the in-process app and for a served one alike."""

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
from urllib.parse import parse_qs, quote_plus, urlencode, urlsplit

import httpx
from joserfc import jwt
from joserfc.jwk import KeySet

from campusid.idp.accounts import add_user
from campusid.idp.faces import app_service
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
    """The async methods of the store's repositories (or of a service over it, `target`), called
    from a test's synchronous code: `db.apps.get("x")`, `apps.submit("x")`."""

    def __init__(self, store: Store, target=None) -> None:
        self._store = store
        self._target = target if target is not None else store

    def __getattr__(self, name: str):
        found = getattr(self._target, name)
        if not callable(found):  # a repository: its methods, synchronously
            return SyncStore(self._store, found)
        return lambda *args, **kwargs: run(self._store, found(*args, **kwargs))


class Clock:
    """A clock the test moves instead of sleeping: called, it tells `now` (by default the time it
    was made at)."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


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
    apps = app_service(store)
    if run(store, store.users.by_username(owner)) is None:
        make_user(store, owner, role="developer")
    if run(store, store.users.by_username(admin)) is None:
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


def pending_handle(csrf_token: str) -> str:
    """The pending sign-in a page's CSRF token names (its handle, before the dot)."""
    handle, dot, _ = csrf_token.partition(".")
    assert dot, "the token names no pending sign-in"
    return handle


def callback_params(location: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def basic(client_id: str, secret: str) -> dict:
    """The Authorization header of client_secret_basic (RFC 6749 2.3.1: each part form-encoded)."""
    raw = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    return {"Authorization": "Basic " + base64.b64encode(raw).decode()}


def id_claims(idp, token_response) -> dict:
    """The ID token's claims, verified as a relying party would: against the published JWKS."""
    assert token_response.status_code == 200, token_response.text
    with idp.client() as c:
        keys = KeySet.import_key_set(c.get("/oauth/jwks").json())
    return jwt.decode(token_response.json()["id_token"], keys, algorithms=["RS256"]).claims


# -- a browser on the IdP's pages ---------------------------------------------------------------
# `client` is an httpx client: the in-process app's TestClient (its base URL is the issuer) or a
# plain one talking to a served IdP (then `issuer` says where it is).
def _origin(issuer: str) -> str:
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}"


def _issuer_of(client: httpx.Client, issuer: str | None) -> str:
    return (issuer or str(client.base_url)).rstrip("/")


def follow(client: httpx.Client, r: httpx.Response, issuer: str | None = None) -> httpx.Response:
    """Follow redirects within the IdP; stop at a page or at a redirect out of it."""
    issuer = _issuer_of(client, issuer)
    for _ in range(10):
        if r.status_code not in (302, 303):
            return r
        location = r.headers["location"]
        if location.startswith("/"):
            location = _origin(issuer) + location
        if not location.startswith(issuer + "/"):
            return r
        r = client.get(location)
    raise AssertionError("too many redirects")


def answer_pages(
    client: httpx.Client,
    r: httpx.Response,
    username: str,
    password: str = PASSWORD,
    consent: str = "allow",
    code=None,
    issuer: str | None = None,
):
    """From `r` on, answer the IdP's pages as a person would: the login form with these credentials,
    the second-factor form with `code()` (when `code` is given), the consent form with `consent`.
    The callback's parameters at the first redirect out of the IdP; or the response of the first
    page it cannot get past."""
    issuer = _issuer_of(client, issuer)
    for _ in range(8):
        r = follow(client, r, issuer)
        if r.status_code in (302, 303):
            return callback_params(r.headers["location"])
        if r.status_code != 200:
            return r
        if 'id="login-form"' in r.text:
            form, answer = "login-form", {"username": username, "password": password}
        elif 'id="mfa-form"' in r.text and code is not None:
            form, answer = "mfa-form", {"code": code()}
        elif 'id="consent-form"' in r.text:
            form, answer = "consent-form", {"decision": consent}
        else:
            return r
        action, fields = form_fields(r.text, form)
        r = client.post(_origin(issuer) + action, data={**fields, **answer})
    raise AssertionError("too many steps")


def login_through_pages(
    client: httpx.Client, issuer: str, flow: Flow, username: str, password: str = PASSWORD, consent: str = "allow"
) -> dict[str, str]:
    """Drive authorize → login form → consent form → redirect like a browser; returns callback params."""
    r = client.get(f"{issuer}/oauth/authorize?{urlencode(flow.params)}")
    answered = answer_pages(client, r, username, password, consent, issuer=issuer)
    if isinstance(answered, httpx.Response):
        raise AssertionError(f"unexpected page {answered.status_code}: {answered.text[:500]}")
    return answered


def login_form(client: httpx.Client, next_path: str | None = None) -> tuple[str, dict[str, str]]:
    """The IdP's own login page (`/login?next=…`), its redirects followed: the form's action and
    hidden fields."""
    r = follow(client, client.get("/login" if next_path is None else f"/login?next={next_path}"))
    assert r.status_code == 200, r.text[:300]
    return form_fields(r.text, "login-form")


def login_csrf(client: httpx.Client) -> str:
    """The CSRF token of a fresh login form (it names the pending sign-in the form belongs to)."""
    return login_form(client)[1]["csrf_token"]


def post_login(client: httpx.Client, username: str, password: str = PASSWORD, next_path: str | None = None):
    """Open the IdP's own login page and post its form with these credentials: the post's answer."""
    action, fields = login_form(client, next_path)
    return client.post(action, data={**fields, "username": username, "password": password})
