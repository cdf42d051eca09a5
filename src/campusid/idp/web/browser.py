"""A browser's side of the sign-in: its session, its pending sign-ins, and the CSRF tokens bound
to them.

The session cookie holds a 256-bit random id; the database keeps only its SHA-256. Cookies are
HttpOnly and SameSite=Lax, and under https Secure with the `__Host-` prefix. A login always makes
a new session id (no fixation); logout deletes the session server-side.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp.context import Context
from campusid.idp.crypto import b64url, equal, new_token, token_hash
from campusid.idp.errors import RequestError
from campusid.idp.ratelimit import client_ip
from campusid.idp.signin import pending, sessions
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.store.rows import Ended, Interaction, Session, SignIn
from campusid.idp.web import cookies
from campusid.idp.web.http import query_params

SESSION = "campusid_session"


def cookie_name(ctx: Context, base: str) -> str:
    return f"__Host-{base}" if ctx.settings.secure_cookies else base


def _set(ctx: Context, response: Response, base: str, value: str, max_age: int) -> None:
    cookies.set_cookie(response, cookie_name(ctx, base), value, max_age, secure=ctx.settings.secure_cookies)


def _clear(ctx: Context, response: Response, base: str) -> None:
    cookies.clear_cookie(response, cookie_name(ctx, base), secure=ctx.settings.secure_cookies)


def _cookie(ctx: Context, request: Request, base: str) -> str | None:
    value = request.cookies.get(cookie_name(ctx, base))
    if not value or len(value) > 128:
        return None
    return value


# -- sessions ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CurrentSession:
    """This browser's live session and its cookie value (`raw_id`, which CSRF tokens bind to)."""

    raw_id: str
    session: Session

    @property
    def user_id(self) -> str:
        return self.session.user_id

    @property
    def auth_time(self) -> int:
        return self.session.auth_time

    @property
    def sign_in(self) -> SignIn:
        return self.session.sign_in


def session_cookie(ctx: Context, request: Request) -> str | None:
    """This browser's session id as its cookie holds it (not yet checked against the store)."""
    return _cookie(ctx, request, SESSION)


async def current_session(ctx: Context, request: Request) -> CurrentSession | None:
    """The live session of this browser, or None."""
    raw = _cookie(ctx, request, SESSION)
    if raw is None:
        return None
    row = await ctx.store.sessions.get(token_hash(raw), int(time.time()))
    return CurrentSession(raw, row) if row is not None else None


def new_session(ctx: Context, sign_in: SignIn, request: Request | None = None) -> tuple[str, Session]:
    """A fresh session for `sign_in` (signin/sessions.py) from this browser (its address and user
    agent, which /account shows)."""
    ip = user_agent = None
    if request is not None:
        ip = client_ip(request, ctx.settings.trusted_proxies)
        user_agent = request.headers.get("user-agent") or None
    return sessions.new_session(sign_in, ctx.settings.session_ttl, ip, user_agent)


def previous_session_hash(ctx: Context, request: Request) -> str | None:
    """The hash of the session this browser presents, which a new login ends."""
    old = _cookie(ctx, request, SESSION)
    return token_hash(old) if old is not None else None


def set_session_cookie(ctx: Context, response: Response, raw: str) -> None:
    _set(ctx, response, SESSION, raw, ctx.settings.session_ttl)


async def start_session(ctx: Context, request: Request, response: Response, sign_in: SignIn) -> None:
    """A fresh session id at every login; the browser's previous session ends server-side."""
    raw, row = new_session(ctx, sign_in, request)
    await ctx.store.sessions.start(row, replaces=previous_session_hash(ctx, request))
    set_session_cookie(ctx, response, raw)


async def end_session(ctx: Context, request: Request, response: Response) -> Ended | None:
    """Sign this browser out: its session ends server-side with every grant issued in it (the
    apps' refresh and access tokens stop working), the faces are told (their apps are notified),
    and its cookie is cleared."""
    raw = _cookie(ctx, request, SESSION)
    ended = await ctx.store.sessions.end(token_hash(raw), int(time.time())) if raw is not None else None
    _clear(ctx, response, SESSION)
    if ended is not None:
        ctx.logout.sessions_ended(ended)
    return ended


# -- pending sign-ins (signin/pending.py), one per tab ----------------------------------------
# The browser's binder: a random secret in a cookie, the same for every pending sign-in of this
# browser. A pending sign-in is stored under the hash of the binder and its own handle, and its
# handle travels in its pages (the CSRF token of its forms, `?interaction=` in its links), so one
# browser may have several at once (an app's sign-in in one tab, the admin console in another)
# and none is reachable without the binder's cookie.
BINDER = "campusid_interaction"
HANDLE = "interaction"  # the query parameter that names a pending sign-in on its pages
_HANDLE_MAX = 64


def _binder(ctx: Context, request: Request) -> str | None:
    return _cookie(ctx, request, BINDER)


def pending_key(binder: str, handle: str) -> str:
    """The stored key of the pending sign-in `handle` of the browser `binder`."""
    return token_hash(f"{binder}.{handle}")


def with_handle(path: str, of: PendingSignIn) -> str:
    """`path` of one of this server's pages, naming the pending sign-in `of` (`?interaction=`)."""
    return f"{path}{'&' if '?' in path else '?'}{HANDLE}={of.handle}"


def new_pending(
    ctx: Context,
    request: Request,
    kind: str,
    request_params: Mapping,
    stage: str = pending.LOGIN,
    sign_in: SignIn | None = None,
    *,
    client_id: str | None = None,
    client_name: str | None = None,
    step: str | None = None,
    done: bool = False,
    locale: str | None = None,
) -> tuple[PendingSignIn, str | None]:
    """A pending sign-in of this browser, not yet stored, and the binder to set in a cookie when
    the browser has none yet (else None): store it with `begin_pending` or in a login's write."""
    binder = _binder(ctx, request)
    fresh = binder is None
    if fresh:
        binder = new_token(32)
    handle = new_token(24)
    now = int(time.time())
    row = Interaction(
        id_hash=pending_key(binder, handle),
        kind=kind,
        params=pending.params(
            request_params, stage, client_id=client_id, client_name=client_name, step=step, done=done, locale=locale
        ),
        user_id=sign_in.user_id if sign_in else None,
        auth_time=sign_in.auth_time if sign_in else None,
        created_at=now,
        expires_at=now + ctx.settings.interaction_ttl,
        sid=sign_in.sid if sign_in else None,
        amr=sign_in.amr if sign_in else None,
        acr=sign_in.acr if sign_in else None,
    )
    return PendingSignIn(handle, row), binder if fresh else None


def next_stage(
    ctx: Context, request: Request, before: PendingSignIn, stage: str, sign_in: SignIn, **step
) -> PendingSignIn:
    """`before` moved on to `stage` in `sign_in` (a new handle: a handle is good for one step)."""
    after, _ = new_pending(
        ctx,
        request,
        before.kind,
        before.request,
        stage,
        sign_in,
        client_id=before.client_id,
        client_name=before.client_name,
        locale=before.locale,
        **step,
    )
    return after


def keep_binder(ctx: Context, response: Response, binder: str | None) -> None:
    """Set the browser's new binder cookie on `response` (nothing when it had one already)."""
    if binder is not None:
        _set(ctx, response, BINDER, binder, ctx.settings.session_ttl)


async def begin_pending(
    ctx: Context, request: Request, response: Response, kind: str, request_params: Mapping, **more
) -> PendingSignIn:
    """Store a new pending sign-in of this browser (its binder cookie set on `response` if new)."""
    begun, binder = new_pending(ctx, request, kind, request_params, **more)
    await ctx.store.sessions.create_interaction(begun.row)
    keep_binder(ctx, response, binder)
    return begun


def _valid_handle(handle: str | None) -> bool:
    return (
        bool(handle)
        and len(handle) <= _HANDLE_MAX
        and handle.isascii()
        and handle.replace("-", "").replace("_", "").isalnum()
    )


async def find_pending(
    ctx: Context, request: Request, handle: str | None, login_username: str | None = None
) -> PendingSignIn | None:
    """This browser's pending sign-in `handle`, live, or None. With `login_username`, what the
    login needs is read in the same statement (the user of that name, the app and its consent)."""
    binder = _binder(ctx, request)
    if binder is None or not _valid_handle(handle):
        return None
    key, now = pending_key(binder, handle), int(time.time())
    login = None
    if login_username is None:
        row = await ctx.store.sessions.interaction(key, now)
    else:
        login = await ctx.store.sessions.login_context(key, now, login_username)
        row = login.interaction if login is not None else None
    if row is None:
        return None
    try:
        return pending.read(handle, row, login)
    except pending.NotASignIn:
        return None


def _query_handle(request: Request) -> str | None:
    try:
        return query_params(request).get(HANDLE)
    except RequestError:
        return None


async def pending_of_page(ctx: Context, request: Request) -> PendingSignIn | None:
    """The pending sign-in a page's link names (`?interaction=`)."""
    return await find_pending(ctx, request, _query_handle(request))


async def pending_of_form(
    ctx: Context, request: Request, form: Mapping, login_username: str | None = None
) -> PendingSignIn | None:
    """The pending sign-in a form posted to (its action names it, `?interaction=`; a script that
    posts to the bare path is understood by the handle its CSRF token carries)."""
    handle = _query_handle(request) or handle_of(form.get("csrf_token"))
    return await find_pending(ctx, request, handle, login_username)


async def speak(ctx: Context, at: PendingSignIn, locale: str) -> bool:
    """The rest of the sign-in `at` in `locale` (the person chose it on one of its pages, above what
    the app asked); False when the sign-in is gone."""
    return await ctx.store.sessions.set_interaction_params(at.id_hash, {**at.row.params, "locale": locale})


async def finish_pending(ctx: Context, done: PendingSignIn) -> bool:
    """End `done`: True for the one request that did (a second tab cannot finish it again)."""
    return await ctx.store.sessions.finish_interaction(done.id_hash)


def pending_csrf(ctx: Context, purpose: str, of: PendingSignIn) -> str:
    """The CSRF token of a form of `of`'s pages: its handle, and a MAC over its stored key (which
    only this browser's binder and the handle give)."""
    return f"{of.handle}.{csrf_token(ctx, purpose, of.id_hash)}"


def handle_of(token: str | None) -> str | None:
    """The pending sign-in a CSRF token names (None when it names none: a session's token)."""
    handle, dot, _ = (token or "").partition(".")
    return handle if dot and _valid_handle(handle) else None


def pending_csrf_ok(ctx: Context, purpose: str, of: PendingSignIn, token: str | None) -> bool:
    return handle_of(token) == of.handle and csrf_ok(ctx, purpose, of.id_hash, (token or "").partition(".")[2])


# -- CSRF -------------------------------------------------------------------------------------
def csrf_token(ctx: Context, purpose: str, bound_to: str) -> str:
    """A token bound to one purpose and one secret cookie value (interaction or session id)."""
    mac = hmac.new(ctx.csrf_key, f"{purpose}|{bound_to}".encode(), hashlib.sha256).digest()
    return b64url(mac)


def csrf_ok(ctx: Context, purpose: str, bound_to: str, submitted: str | None) -> bool:
    return bool(submitted) and equal(csrf_token(ctx, purpose, bound_to), submitted)
