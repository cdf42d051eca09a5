"""The second-factor pages (docs/mfa.md): `/login/mfa` asks a person with a factor for a code after
the password (`form#mfa-form`), and `/account/security/totp` sets up an authenticator app (the
secret in `code#totp-secret` beside a QR code made here, confirmed by `form#totp-enrol-form`,
answered with the recovery codes, each `.recovery-code`).

Setting up a factor is reached two ways: signed in (from /account, or sent there by the consoles'
policy), or in the middle of a sign-in that the policy says needs a factor the person does not
have yet (a pending sign-in at the SECOND_FACTOR stage, step ENROL, named by `?interaction=`);
then the confirming code is this sign-in's second factor, and "Continue" finishes the sign-in.
Each pending sign-in is its own: opening another page of this server meanwhile (the admin
console, which begins a sign-in of its own) takes nothing from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from campusid.i18n import N_
from campusid.idp import events
from campusid.idp.context import Context
from campusid.idp.errors import RequestError
from campusid.idp.pages.login import expired, local_next, signed_in, stage_page
from campusid.idp.ratelimit import client_ip
from campusid.idp.signin import mfa
from campusid.idp.signin import pending as stages
from campusid.idp.signin.passkeys import offered
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.store.factors import TOTP
from campusid.idp.store.rows import User
from campusid.idp.web.browser import (
    CurrentSession,
    csrf_ok,
    csrf_token,
    current_session,
    finish_pending,
    handle_of,
    next_stage,
    pending_csrf,
    pending_csrf_ok,
    pending_of_form,
    pending_of_page,
    with_handle,
)
from campusid.idp.web.http import PASSKEY_CSP, detour, query_params, read_form, read_form_or_refusal, see_other
from campusid.idp.web.render import FORM_EXPIRED, error_page, page, page_endpoint

MFA_PURPOSE = "mfa"
TOTP_PURPOSE = "totp-enrol"
BAD_CODE = N_("Enter the 6 digits your authenticator app shows, or a 12-character recovery code.")
WRONG_CODE = N_("That code is not correct, or it was already used. Wait for the next code and try again.")
WRONG_NEW_CODE = N_("That code does not match. Check the time on your phone and enter the current code.")
SET_UP_TITLE = N_("Set up an authenticator app")


def _at_second_factor(at: PendingSignIn | None) -> PendingSignIn | None:
    return at if at is not None and at.stage == stages.SECOND_FACTOR else None


def _mfa_page(
    ctx: Context,
    request: Request,
    at: PendingSignIn,
    status: int = 200,
    error: str | None = None,
    headers: dict | None = None,
    passkeys: bool = False,
) -> Response:
    if passkeys:
        headers = {**(headers or {}), "Content-Security-Policy": PASSKEY_CSP}
    return page(
        ctx,
        request,
        "mfa.html",
        status=status,
        headers=headers,
        at=at,
        passkeys=passkeys,
        error=error,
        done=at.done,
        csrf=pending_csrf(ctx, MFA_PURPOSE, at),
        action=with_handle(ctx.path("/login/mfa"), at),
    )


def _refused(ctx: Context, request: Request, at: PendingSignIn, refusal) -> Response:
    """The second-factor page again, saying why the code was not checked (429 over the limit,
    503 when its counters cannot be reached) and when to retry."""
    headers = {"Retry-After": str(refusal.retry_after)}
    return _mfa_page(ctx, request, at, refusal.status, refusal.message, headers=headers)


async def mfa_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    at = _at_second_factor(await pending_of_page(ctx, request))
    if at is None:
        return expired(ctx, request)
    if at.step == stages.ENROL and not at.done:
        return see_other(stage_page(ctx, at))
    passkeys = offered(ctx.settings.issuer) and bool(await ctx.store.factors.passkey_ids(at.user_id))
    return _mfa_page(ctx, request, at, passkeys=passkeys)


async def mfa_post(request: Request) -> Response:
    """Check the code (a TOTP code, once per time step, or a recovery code, once); 5 wrong codes
    per account in the window are answered as ordinary failures, then 429 with Retry-After."""
    ctx: Context = request.app.state.ctx
    form, unreadable = await read_form_or_refusal(request)
    at = _at_second_factor(await pending_of_form(ctx, request, form))
    if at is None:
        return expired(ctx, request)
    if unreadable is not None:
        return _mfa_page(ctx, request, at, unreadable.status, unreadable.message or BAD_CODE)
    if not pending_csrf_ok(ctx, MFA_PURPOSE, at, form.get("csrf_token")):
        return _mfa_page(ctx, request, at, 403, FORM_EXPIRED)
    sign_in = at.sign_in
    if at.done:  # the factor was set up and confirmed in this sign-in
        return await signed_in(ctx, request, at, sign_in)
    if at.step != stages.VERIFY:
        return see_other(stage_page(ctx, at))
    if mfa.parse_code(form.get("code")) is None:
        return _mfa_page(ctx, request, at, 400, BAD_CODE)
    limiter = ctx.limiter
    if limiter is not None:
        refusal = await limiter.before_second_factor(sign_in.user_id)
        if refusal is not None:
            return _refused(ctx, request, at, refusal)
    method = await ctx.factors.verify(sign_in.user_id, form.get("code"))
    user = await ctx.store.users.get(sign_in.user_id)
    ip = client_ip(request, ctx.settings.trusted_proxies)
    if method is None:
        if limiter is not None:
            refusal = await limiter.wrong_second_factor(sign_in.user_id)
            if refusal is not None:
                return _refused(ctx, request, at, refusal)
        username = user.username if user else None
        await ctx.events.record(events.MFA_FAILURE, username=username, ip=ip, detail="wrong or reused code")
        return _mfa_page(ctx, request, at, 401, WRONG_CODE)
    await ctx.events.record(  # the sign-in succeeds with its second factor, not before
        events.LOGIN_SUCCESS,
        username=user.username if user else None,
        client_id=at.client_id,
        ip=ip,
        detail=f"password and {method}",
    )
    return await signed_in(ctx, request, at, mfa.with_second_factor(sign_in, method))


# -- setting up an authenticator app -------------------------------------------------------------
@dataclass(frozen=True)
class Enroller:
    """Who is setting up a factor: a signed-in person (`session`) or a sign-in waiting for one (`at`)."""

    user: User
    session: CurrentSession | None = None
    at: PendingSignIn | None = None

    def csrf(self, ctx: Context) -> str:
        if self.at is not None:
            return pending_csrf(ctx, TOTP_PURPOSE, self.at)
        return csrf_token(ctx, TOTP_PURPOSE, self.session.raw_id)

    def csrf_ok(self, ctx: Context, token: str | None) -> bool:
        if self.at is not None:
            return pending_csrf_ok(ctx, TOTP_PURPOSE, self.at, token)
        return csrf_ok(ctx, TOTP_PURPOSE, self.session.raw_id, token)


def _enrolling(at: PendingSignIn | None) -> PendingSignIn | None:
    at = _at_second_factor(at)
    return at if at is not None and at.step == stages.ENROL and not at.done else None


async def _enroller(ctx: Context, request: Request, at: PendingSignIn | None) -> Enroller | None:
    """The sign-in `at` names (it waits for a factor), else this browser's signed-in person."""
    if at is not None:
        user = await ctx.store.users.get(at.user_id)
        return Enroller(user, at=at) if user is not None else None
    session = await current_session(ctx, request)
    if session is None:
        return None
    user = await ctx.store.users.get(session.user_id)
    return Enroller(user, session=session) if user is not None else None


def _next(ctx: Context, request: Request) -> str:
    try:
        return local_next(ctx, query_params(request).get("next"))
    except RequestError:  # a malformed query only loses the way back
        return ctx.path("/account")


def _sign_in_again(ctx: Context, request: Request) -> Response:
    return see_other(detour(ctx.path("/login"), request, ctx.path("/")))


def _here(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def _enrol_page(ctx, request, who: Enroller, enrolment, status: int = 200, error: str | None = None) -> Response:
    action = with_handle(request.url.path, who.at) if who.at is not None else _here(request)
    return page(
        ctx,
        request,
        "totp_enrol.html",
        status=status,
        at=who.at,
        error=error,
        enrolment=enrolment,
        required=who.at is not None,
        csrf=who.csrf(ctx),
        action=action,
    )


async def totp_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    at = await pending_of_page(ctx, request)
    if at is not None and _enrolling(at) is None:  # named, but past this step (or not at it)
        return see_other(stage_page(ctx, at)) if _at_second_factor(at) is not None else expired(ctx, request)
    who = await _enroller(ctx, request, at)
    if who is None:
        return _sign_in_again(ctx, request)
    if any(f.kind == TOTP for f in await ctx.factors.factors(who.user.id)):
        return page(ctx, request, "totp_done.html", at=who.at, codes=None, already=True, account=ctx.path("/account"))
    return _enrol_page(ctx, request, who, await ctx.factors.start_totp(who.user))


@page_endpoint
async def totp_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    form = await read_form(request)
    token = form.get("csrf_token")
    at = None
    if handle_of(token) is not None:  # the form of a sign-in waiting for its factor
        at = _enrolling(await pending_of_form(ctx, request, form))
        if at is None:
            return expired(ctx, request)
    who = await _enroller(ctx, request, at)
    if who is None:
        return _sign_in_again(ctx, request)
    if not who.csrf_ok(ctx, token):
        return error_page(ctx, request, FORM_EXPIRED, status=403, title=SET_UP_TITLE, at=at)
    factor_id = form.get("factor", "")
    codes = await ctx.factors.confirm_totp(who.user.id, factor_id, form.get("code"))
    if codes is None:
        enrolment = await ctx.factors.pending_enrolment(who.user, factor_id)
        if enrolment is None:
            return see_other(with_handle(request.url.path, at) if at is not None else _here(request))
        message = BAD_CODE if mfa.parse_code(form.get("code")) is None else WRONG_NEW_CODE
        return _enrol_page(ctx, request, who, enrolment, 400, message)
    await ctx.events.record(
        events.MFA_ENROLLED,
        username=who.user.username,
        ip=client_ip(request, ctx.settings.trusted_proxies),
        detail="totp",
    )
    if at is None:
        return page(
            ctx, request, "totp_done.html", switch=False, codes=codes, already=False, account=_next(ctx, request)
        )
    # This sign-in's second factor is the code just confirmed: it goes on under a new handle that
    # holds the sign-in with it ("Continue" posts to /login/mfa).
    done = next_stage(
        ctx, request, at, stages.SECOND_FACTOR, mfa.with_second_factor(at.sign_in, mfa.OTP), step=at.step, done=True
    )
    if not await finish_pending(ctx, at):  # finished meanwhile: the factor stands, its codes are shown
        return page(
            ctx,
            request,
            "totp_done.html",
            switch=False,
            asked=at.locale,
            codes=codes,
            already=False,
            account=ctx.path("/account"),
        )
    await ctx.store.sessions.create_interaction(done.row)
    return page(
        ctx,
        request,
        "totp_done.html",
        switch=False,  # the codes are shown this once: a switch would lose them
        at=done,
        codes=codes,
        already=False,
        continue_action=ctx.path("/login/mfa"),
        csrf=pending_csrf(ctx, MFA_PURPOSE, done),
    )
