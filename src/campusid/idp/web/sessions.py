"""Server-side browser sessions and pending interactions, and the CSRF tokens bound to them.

The cookie holds a 256-bit random id; the database keeps only its SHA-256. Cookies are
HttpOnly and SameSite=Lax, and under https Secure with the `__Host-` prefix. A login always
makes a new session id (no fixation); logout deletes the session server-side.
"""

from __future__ import annotations

import hashlib
import hmac
import time

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp.crypto import b64url, equal, new_token, token_hash
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
def session_cookie(ctx: Context, request: Request) -> str | None:
    """This browser's session id as its cookie holds it (not yet checked against the store)."""
    return _cookie(ctx, request, SESSION)


def current_session(ctx: Context, request: Request) -> dict | None:
    """The live session of this browser, with `raw_id` (the cookie value), or None."""
    raw = _cookie(ctx, request, SESSION)
    if raw is None:
        return None
    row = ctx.store.sessions.get(token_hash(raw), int(time.time()))
    if row is None:
        return None
    row["raw_id"] = raw
    return row


def new_session(ctx: Context, user_id: str, auth_time: int) -> tuple[str, dict]:
    """A fresh session: its id (the cookie value) and the row the store keeps (the id's hash)."""
    raw = new_token(32)
    row = {
        "id_hash": token_hash(raw),
        "user_id": user_id,
        "auth_time": auth_time,
        "created_at": auth_time,
        "expires_at": auth_time + ctx.settings.session_ttl,
    }
    return raw, row


def previous_session_hash(ctx: Context, request: Request) -> str | None:
    """The hash of the session this browser presents, which a new login ends."""
    old = _cookie(ctx, request, SESSION)
    return token_hash(old) if old is not None else None


def set_session_cookie(ctx: Context, response: Response, raw: str) -> None:
    _set(ctx, response, SESSION, raw, ctx.settings.session_ttl)


async def start_session(ctx: Context, request: Request, response: Response, user_id: str, auth_time: int) -> None:
    """A fresh session id at every login; the browser's previous session ends server-side."""
    old = previous_session_hash(ctx, request)
    if old is not None:
        await ctx.store.hot.delete_session(old)
    raw, row = new_session(ctx, user_id, auth_time)
    await ctx.store.hot.create_session(row)
    set_session_cookie(ctx, response, raw)


def end_session(ctx: Context, request: Request, response: Response) -> None:
    raw = _cookie(ctx, request, SESSION)
    if raw is not None:
        ctx.store.sessions.delete(token_hash(raw))
    _clear(ctx, response, SESSION)


# -- interactions (a pending login or consent) ------------------------------------------------
def new_interaction_id() -> str:
    return new_token(32)


def new_interaction(
    ctx: Context,
    kind: str,
    params: dict,
    user_id: str | None = None,
    auth_time: int | None = None,
    *,
    raw: str | None = None,
) -> tuple[str, dict]:
    """A pending interaction: its id (the cookie value; `raw` when the caller drew it already) and
    the row the store keeps; `user_id` and `auth_time` when the user has just signed in for it."""
    raw = raw or new_interaction_id()
    now = int(time.time())
    row = {
        "id_hash": token_hash(raw),
        "kind": kind,
        "params": params,
        "user_id": user_id,
        "auth_time": auth_time,
        "created_at": now,
        "expires_at": now + ctx.settings.interaction_ttl,
    }
    return raw, row


def set_interaction_cookie(ctx: Context, response: Response, raw: str) -> None:
    _set(ctx, response, INTERACTION, raw, ctx.settings.interaction_ttl)


async def begin_interaction(
    ctx: Context,
    response: Response,
    kind: str,
    params: dict,
    user_id: str | None = None,
    auth_time: int | None = None,
    *,
    raw: str | None = None,
) -> str:
    """A pending interaction, stored and its cookie set. `raw`: its id, drawn (new_interaction_id)
    by a caller whose response shows it already (the login form's CSRF token); a new one otherwise."""
    raw, row = new_interaction(ctx, kind, params, user_id, auth_time, raw=raw)
    await ctx.store.hot.create_interaction(row)
    set_interaction_cookie(ctx, response, raw)
    return raw


async def current_interaction(ctx: Context, request: Request, login_username: str | None = None) -> dict | None:
    """This browser's pending interaction, with `raw_id` (the cookie value), or None. With
    `login_username`, what the login needs is read in the same statement: the user of that name
    (`login_user_id`, `login_password_hash`) and the client with its consent (`login_client`)."""
    raw = _cookie(ctx, request, INTERACTION)
    if raw is None:
        return None
    if login_username is None:
        row = await ctx.store.hot.interaction(token_hash(raw), int(time.time()))
    else:
        row = await ctx.store.hot.interaction_for_login(token_hash(raw), int(time.time()), login_username)
    if row is None:
        return None
    row["raw_id"] = raw
    return row


def clear_interaction_cookie(ctx: Context, response: Response) -> None:
    _clear(ctx, response, INTERACTION)


async def finish_interaction(ctx: Context, interaction: dict, response: Response) -> bool:
    _clear(ctx, response, INTERACTION)
    return await ctx.store.hot.finish_interaction(interaction["id_hash"])


# -- CSRF -------------------------------------------------------------------------------------
def csrf_token(ctx: Context, purpose: str, bound_to: str) -> str:
    """A token bound to one purpose and one secret cookie value (interaction or session id)."""
    mac = hmac.new(ctx.csrf_key, f"{purpose}|{bound_to}".encode(), hashlib.sha256).digest()
    return b64url(mac)


def csrf_ok(ctx: Context, purpose: str, bound_to: str, submitted: str | None) -> bool:
    return bool(submitted) and equal(csrf_token(ctx, purpose, bound_to), submitted)
