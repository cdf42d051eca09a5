"""`/account` (docs/mfa.md): a signed-in person's profile, their sessions (sign out one, or every
other), the apps connected to their account (removing one forgets the consent and revokes every
code, access and refresh token it holds for them) and security (password, authenticator app,
recovery codes). Every form carries a CSRF token bound to this browser's session; every change is
a POST answered with 303 back to the page. Signed out, the page leads to the login and back.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from campusid.i18n import N_
from campusid.idp import events
from campusid.idp.accounts import rules
from campusid.idp.context import Context
from campusid.idp.ratelimit import client_ip
from campusid.idp.signin import policy
from campusid.idp.signin.passkeys import offered
from campusid.idp.store.factors import PASSKEY, TOTP
from campusid.idp.store.rows import User
from campusid.idp.web.browser import CurrentSession, csrf_ok, csrf_token, current_session
from campusid.idp.web.http import PASSKEY_CSP, detour, read_form, see_other
from campusid.idp.web.render import FORM_EXPIRED, UNREADABLE, error_page, page, page_endpoint

PURPOSE = "account"
# What the page says after a change (`?done=`).
DONE = {
    "session": N_("That session was signed out."),
    "others": N_("Every other session was signed out."),
    "app": N_("The app no longer has access to your account."),
    "factor": N_("The factor was removed."),
    "password": N_("Your password was changed."),
    "passkey": N_("Your passkey was added."),
}
TITLE = N_("Your account")
CHANGE_PASSWORD = N_("Change password")


@dataclass(frozen=True)
class Me:
    user: User
    session: CurrentSession


# An account POST's own work: (ctx, request, me, the form or the id it names) -> the answer.
Step = Callable[[Context, Request, Me, Any], Awaitable[Response]]


async def policy_redirect(ctx: Context, request: Request, user: User, session: CurrentSession) -> Response | None:
    """A user whose role must use a second factor (CAMPUSID_MFA_REQUIRED_ROLES) goes nowhere
    else before this session used one: without a factor, to set one up; with one, to sign in
    again with it. None when the session may go on."""
    if policy.session_meets_role(session.sign_in, user.role, ctx.settings.mfa_required_roles):
        return None
    home = ctx.path("/")
    if not await ctx.factors.has_factor(user.id):
        return see_other(detour(ctx.path("/account/security/totp"), request, home))
    return see_other(detour(ctx.path("/login"), request, home))


async def _me(ctx: Context, request: Request) -> tuple[Me | None, Response | None]:
    session = await current_session(ctx, request)
    user = await ctx.store.users.get(session.user_id) if session is not None else None
    if session is None or user is None:
        return None, see_other(ctx.path("/login") + "?next=" + quote(ctx.path("/account"), safe="/"))
    redirect = await policy_redirect(ctx, request, user, session)
    if redirect is not None:
        return None, redirect
    return Me(user, session), None


async def account_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    me, redirect = await _me(ctx, request)
    if redirect is not None:
        return redirect
    now = int(time.time())
    await ctx.store.sessions.seen(me.session.session.id_hash, now)
    sessions = await ctx.store.sessions.of_user(me.user.id, now)
    factors = await ctx.factors.factors(me.user.id)
    done = request.query_params.get("done")
    passkeys_offered = offered(ctx.settings.issuer)
    return page(
        ctx,
        request,
        "account.html",
        headers={"Content-Security-Policy": PASSKEY_CSP} if passkeys_offered else None,
        me=me.user,
        notice=DONE.get(done or ""),
        this_sid=me.session.session.sid,
        sessions=sessions,
        apps=await ctx.store.grants.connected_apps(me.user.id),
        totp=[f for f in factors if f.kind == TOTP],
        passkeys=[f for f in factors if f.kind == PASSKEY],
        passkeys_offered=passkeys_offered,
        mode="enrol",
        codes_left=await ctx.factors.recovery_codes_left(me.user.id) if factors else None,
        local_password=bool(me.user.password_hash),
        password_lengths=(rules.MIN_PASSWORD, rules.MAX_PASSWORD),
        csrf=csrf_token(ctx, PURPOSE, me.session.raw_id),
    )


def _account_post(field: str | None = None) -> Callable[[Step], Callable[[Request], Awaitable[Response]]]:
    """A POST of the account page: signed in (else to the login), the form read and its CSRF token
    checked (else the error page), then `step(ctx, request, me, form)`. With `field`, the POST names
    one thing of the account's (a session, an app, a factor) by an id of at most 64 characters in
    that field, and `step` gets that id instead of the form; a missing or oversized id is the 400 page."""

    def wrap(step: Step) -> Callable[[Request], Awaitable[Response]]:
        @page_endpoint  # a form that cannot be read: the error page, saying why
        async def handler(request: Request) -> Response:
            ctx: Context = request.app.state.ctx
            me, redirect = await _me(ctx, request)
            if redirect is not None:
                return redirect
            form = await read_form(request)
            if not csrf_ok(ctx, PURPOSE, me.session.raw_id, form.get("csrf_token")):
                return error_page(ctx, request, FORM_EXPIRED, status=403, title=TITLE)
            if field is None:
                return await step(ctx, request, me, form)
            value = form.get(field, "")
            if not value or len(value) > 64:
                return error_page(ctx, request, UNREADABLE, title=TITLE)
            return await step(ctx, request, me, value)

        handler.__name__ = handler.__wrapped__.__name__ = step.__name__
        return handler

    return wrap


def _back(ctx: Context, done: str) -> Response:
    return see_other(ctx.path("/account") + f"?done={done}")


@_account_post("session")
async def end_session_post(ctx: Context, request: Request, me: Me, sid: str) -> Response:
    """Sign out one other session of this account (by its sid), with the grants issued in it."""
    ended = await ctx.store.sessions.end_by_sid(sid, me.user.id, int(time.time()))
    ctx.logout.sessions_ended(ended)  # the apps of the ended session are told now
    return _back(ctx, "session")


@_account_post()
async def signout_others_post(ctx: Context, request: Request, me: Me, form: dict) -> Response:
    await ctx.store.sessions.end_others(me.user.id, me.session.session.id_hash, int(time.time()))
    ctx.logout.sessions_ended()  # the apps of the ended sessions are told now
    return _back(ctx, "others")


@_account_post("client_id")
async def revoke_app_post(ctx: Context, request: Request, me: Me, client_id: str) -> Response:
    """Remove a connected app: its consent is forgotten (the next authorization asks again) and
    every grant it holds for this user is revoked (RFC 7009 2.1: its refresh and access tokens)."""
    revoked = await ctx.store.grants.remove_connected_app(me.user.id, client_id, int(time.time()))
    await ctx.events.record(
        events.CONSENT_REVOKED,
        username=me.user.username,
        client_id=client_id,
        ip=client_ip(request, ctx.settings.trusted_proxies),
        detail=f"removed on /account; {revoked} grant(s) revoked",
    )
    return _back(ctx, "app")


@_account_post("factor")
async def remove_factor_post(ctx: Context, request: Request, me: Me, factor_id: str) -> Response:
    kind = await ctx.factors.remove(me.user.id, factor_id)
    if kind is not None:
        await ctx.events.record(
            events.MFA_REMOVED,
            username=me.user.username,
            ip=client_ip(request, ctx.settings.trusted_proxies),
            detail=f"{kind} removed by the user on /account",
        )
    return _back(ctx, "factor")


@_account_post()
async def recovery_codes_post(ctx: Context, request: Request, me: Me, form: dict) -> Response:
    if not await ctx.factors.has_factor(me.user.id):
        return _back(ctx, "factor")
    codes = await ctx.factors.new_recovery_codes(me.user.id)
    return page(
        ctx,
        request,
        "totp_done.html",
        switch=False,  # the codes are shown this once
        codes=codes,
        already=False,
        account=ctx.path("/account"),
        continue_action=None,
    )


def password_rule() -> str:
    """The password policy (accounts/rules.py), with its numbers."""
    return N_("The new password must be %(min)s to %(max)s characters.", min=rules.MIN_PASSWORD, max=rules.MAX_PASSWORD)


@_account_post()
async def password_post(ctx: Context, request: Request, me: Me, form: dict) -> Response:
    current, new = form.get("current_password", ""), form.get("new_password", "")
    if not me.user.password_hash:
        return error_page(ctx, request, UNREADABLE, title=TITLE)
    # the one policy, the CLI's too; a current password that long was never set: not worth a hash
    if not rules.password_fits(new) or len(current) > rules.MAX_PASSWORD:
        return error_page(ctx, request, password_rule(), title=CHANGE_PASSWORD)
    if not await ctx.passwords.verify_async(me.user.password_hash, current):
        wrong = N_("The current password is not correct.")
        return error_page(ctx, request, wrong, status=401, title=CHANGE_PASSWORD)
    await ctx.store.users.set_password_hash(me.user.id, await ctx.passwords.hash_async(new))
    return _back(ctx, "password")
