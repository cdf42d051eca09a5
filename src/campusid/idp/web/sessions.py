"""Server-side browser sessions and pending interactions, and the CSRF tokens bound to them.

The cookie holds a 256-bit random id; the database keeps only its SHA-256. Cookies are
HttpOnly and SameSite=Lax, and under https Secure with the `__Host-` prefix. A login always
makes a new session id (no fixation); logout deletes the session server-side.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp.crypto import b64url, equal, new_token, token_hash
from campusid.idp.ratelimit import client_ip
from campusid.idp.store.rows import Interaction, LoginContext, Session, SignIn
from campusid.idp.store.store import Ended
from campusid.idp.web import cookies
from campusid.idp.web.context import Context

SESSION = "campusid_session"
INTERACTION = "campusid_interaction"


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
    row = await ctx.store.session(token_hash(raw), int(time.time()))
    return CurrentSession(raw, row) if row is not None else None


def new_session(ctx: Context, sign_in: SignIn, request: Request | None = None) -> tuple[str, Session]:
    """A fresh session for `sign_in`: its id (the cookie value) and the row the store keeps (the
    id's hash, and the sign-in with its public `sid`; the browser's address and user agent from
    `request`, which /account shows)."""
    raw = new_token(32)
    ip = user_agent = None
    if request is not None:
        ip = client_ip(request, ctx.settings.trusted_proxies)[:64]
        user_agent = (request.headers.get("user-agent") or "")[:200] or None
    row = Session(
        id_hash=token_hash(raw),
        user_id=sign_in.user_id,
        auth_time=sign_in.auth_time,
        created_at=sign_in.auth_time,
        expires_at=sign_in.auth_time + ctx.settings.session_ttl,
        sid=sign_in.sid,
        amr=sign_in.amr,
        acr=sign_in.acr,
        ip=ip,
        user_agent=user_agent,
        last_seen_at=sign_in.auth_time,
    )
    return raw, row


def previous_session_hash(ctx: Context, request: Request) -> str | None:
    """The hash of the session this browser presents, which a new login ends."""
    old = _cookie(ctx, request, SESSION)
    return token_hash(old) if old is not None else None


def set_session_cookie(ctx: Context, response: Response, raw: str) -> None:
    _set(ctx, response, SESSION, raw, ctx.settings.session_ttl)


async def start_session(ctx: Context, request: Request, response: Response, sign_in: SignIn) -> None:
    """A fresh session id at every login; the browser's previous session ends server-side."""
    raw, row = new_session(ctx, sign_in, request)
    await ctx.store.start_session(row, replaces=previous_session_hash(ctx, request))
    set_session_cookie(ctx, response, raw)


async def end_session(ctx: Context, request: Request, response: Response) -> Ended | None:
    """Sign this browser out: its session ends server-side with every grant issued in it (the
    apps' refresh and access tokens stop working), and its cookie is cleared."""
    raw = _cookie(ctx, request, SESSION)
    ended = await ctx.store.end_session(token_hash(raw), int(time.time())) if raw is not None else None
    _clear(ctx, response, SESSION)
    return ended


# -- interactions (a pending login or consent) ------------------------------------------------
@dataclass(frozen=True)
class Pending:
    """This browser's pending interaction and its cookie value (`raw_id`, which the login and
    consent forms' CSRF tokens bind to); `login` when read for a login POST."""

    raw_id: str
    interaction: Interaction
    login: LoginContext | None = None

    @property
    def kind(self) -> str:
        return self.interaction.kind

    @property
    def params(self) -> dict:
        return self.interaction.params

    @property
    def id_hash(self) -> str:
        return self.interaction.id_hash


def new_interaction_id() -> str:
    return new_token(32)


def new_interaction(
    ctx: Context,
    kind: str,
    params: dict,
    sign_in: SignIn | None = None,
    *,
    raw: str | None = None,
) -> Pending:
    """A pending interaction, not yet stored: its id (the cookie value; `raw` when the caller drew
    it already) and the row the store keeps; `sign_in` when the user has just signed in for it."""
    raw = raw or new_interaction_id()
    now = int(time.time())
    row = Interaction(
        id_hash=token_hash(raw),
        kind=kind,
        params=params,
        user_id=sign_in.user_id if sign_in else None,
        auth_time=sign_in.auth_time if sign_in else None,
        created_at=now,
        expires_at=now + ctx.settings.interaction_ttl,
        sid=sign_in.sid if sign_in else None,
        amr=sign_in.amr if sign_in else None,
        acr=sign_in.acr if sign_in else None,
    )
    return Pending(raw, row)


def set_interaction_cookie(ctx: Context, response: Response, raw: str) -> None:
    _set(ctx, response, INTERACTION, raw, ctx.settings.interaction_ttl)


async def begin_interaction(ctx: Context, response: Response, pending: Pending) -> None:
    """Store a pending interaction and set its cookie on `response`."""
    await ctx.store.create_interaction(pending.interaction)
    set_interaction_cookie(ctx, response, pending.raw_id)


async def current_interaction(ctx: Context, request: Request, login_username: str | None = None) -> Pending | None:
    """This browser's pending interaction, or None. With `login_username`, what the login needs
    is read in the same statement (`login`: the user of that name, the client and its consent)."""
    raw = _cookie(ctx, request, INTERACTION)
    if raw is None:
        return None
    if login_username is None:
        row = await ctx.store.interaction(token_hash(raw), int(time.time()))
        return Pending(raw, row) if row is not None else None
    login = await ctx.store.login_context(token_hash(raw), int(time.time()), login_username)
    return Pending(raw, login.interaction, login) if login is not None else None


def clear_interaction_cookie(ctx: Context, response: Response) -> None:
    _clear(ctx, response, INTERACTION)


async def finish_interaction(ctx: Context, pending: Pending, response: Response) -> bool:
    _clear(ctx, response, INTERACTION)
    return await ctx.store.finish_interaction(pending.id_hash)


# -- CSRF -------------------------------------------------------------------------------------
def csrf_token(ctx: Context, purpose: str, bound_to: str) -> str:
    """A token bound to one purpose and one secret cookie value (interaction or session id)."""
    mac = hmac.new(ctx.csrf_key, f"{purpose}|{bound_to}".encode(), hashlib.sha256).digest()
    return b64url(mac)


def csrf_ok(ctx: Context, purpose: str, bound_to: str, submitted: str | None) -> bool:
    return bool(submitted) and equal(csrf_token(ctx, purpose, bound_to), submitted)
