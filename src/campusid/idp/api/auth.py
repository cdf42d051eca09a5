"""Who is calling the management API.

The API uses the IdP's own browser session (the HttpOnly session cookie set by /login), never a
password per request. Requests that change state must also carry `X-CSRF-Token`, an HMAC bound
to that session (read it from `GET /api/v1/me`). A cross-site page can make the browser send the
cookie, but it can neither read the token (no CORS here) nor set a custom header without a CORS
preflight that we never grant.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyCookie, APIKeyHeader

from campusid.idp.context import Context
from campusid.idp.store.rows import User
from campusid.idp.web.browser import SESSION, CurrentSession, csrf_ok, csrf_token, current_session

PURPOSE = "api"
CSRF_HEADER = "X-CSRF-Token"
SAFE = ("GET", "HEAD", "OPTIONS")


class ApiError(Exception):
    def __init__(self, status: int, error: str, description: str) -> None:
        super().__init__(description)
        self.status, self.error, self.description = status, error, description


@dataclass
class Caller:
    user: User
    session: CurrentSession

    @property
    def username(self) -> str:
        return self.user.username

    @property
    def role(self) -> str:
        return self.user.role


def ctx_of(request: Request) -> Context:
    return request.app.state.ctx


# Declared for the OpenAPI document; the checks below read the cookie through sessions.py,
# which knows its real name (`__Host-` prefixed under https).
_cookie_doc = APIKeyCookie(name=SESSION, auto_error=False, description="The IdP session cookie (sign in at /login).")
_csrf_doc = APIKeyHeader(name=CSRF_HEADER, auto_error=False, description="From GET /api/v1/me; state-changing calls.")


async def caller(request: Request, _cookie: str | None = Security(_cookie_doc)) -> Caller:
    ctx = ctx_of(request)
    session = await current_session(ctx, request)
    user = await ctx.store.users.get(session.user_id) if session else None
    if session is None or user is None:
        raise ApiError(401, "login_required", "sign in at /login first; the API uses the IdP session cookie")
    if request.method not in SAFE and not csrf_ok(ctx, PURPOSE, session.raw_id, request.headers.get(CSRF_HEADER)):
        raise ApiError(403, "csrf_failed", f"state-changing requests need the {CSRF_HEADER} header from GET /me")
    return Caller(user=user, session=session)


async def writer(c: Caller = Depends(caller), _csrf: str | None = Security(_csrf_doc)) -> Caller:
    return c


async def developer(c: Caller = Depends(writer)) -> Caller:
    if c.role not in ("developer", "admin"):
        raise ApiError(403, "forbidden", "only developers and administrators manage applications")
    return c


async def reader(c: Caller = Depends(caller)) -> Caller:
    if c.role not in ("developer", "admin"):
        raise ApiError(403, "forbidden", "only developers and administrators manage applications")
    return c


async def admin(c: Caller = Depends(caller)) -> Caller:
    if c.role != "admin":
        raise ApiError(403, "forbidden", "only administrators may do this")
    return c


async def admin_writer(c: Caller = Depends(admin), _csrf: str | None = Security(_csrf_doc)) -> Caller:
    return c


def token_for(request: Request, c: Caller) -> str:
    return csrf_token(ctx_of(request), PURPOSE, c.session.raw_id)
