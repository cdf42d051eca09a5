"""The second-factor pages (docs/mfa.md): `/login/mfa` asks a user with a factor for a code after
the password (`form#mfa-form`), and `/account/security/totp` sets up an authenticator app (the
secret in `code#totp-secret` beside a QR code made here, confirmed by `form#totp-enrol-form`,
answered with the recovery codes, each `.recovery-code`).

Setting up a factor is reached two ways: signed in (from /account, or sent there by the consoles'
policy), or in the middle of a sign-in that the policy says needs a factor the user does not have
yet (the interaction of kind "mfa", step ENROL); then the confirming code is this sign-in's second
factor, and "Continue" finishes the sign-in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import events
from campusid.idp.protocol import mfa
from campusid.idp.protocol.errors import OAuthError
from campusid.idp.protocol.passkeys import offered
from campusid.idp.ratelimit import client_ip
from campusid.idp.store.factors import TOTP
from campusid.idp.store.rows import User
from campusid.idp.web.context import Context
from campusid.idp.web.http import PASSKEY_CSP, detour, error_page, language, page, query_params, read_form, see_other
from campusid.idp.web.pages import MFA_KIND, _local_next, continue_sign_in, unwrap_second_factor
from campusid.idp.web.sessions import (
    CurrentSession,
    Pending,
    begin_interaction,
    csrf_ok,
    csrf_token,
    current_interaction,
    current_session,
    new_interaction,
)

MFA_PURPOSE = "mfa"
TOTP_PURPOSE = "totp-enrol"
EXPIRED = "This sign-in page has expired. Go back to the application and start again."


async def _second_factor_step(ctx: Context, request: Request) -> Pending | None:
    pending = await current_interaction(ctx, request)
    if pending is None or pending.kind != MFA_KIND or pending.interaction.sign_in is None:
        return None
    return pending


def _mfa_page(
    ctx: Context,
    request: Request,
    pending: Pending,
    status: int = 200,
    error: str | None = None,
    headers: dict | None = None,
) -> Response:
    lang, t = language(request)
    passkeys = bool(pending.params.get("passkeys")) and offered(ctx.settings.issuer)
    if passkeys:
        headers = {**(headers or {}), "Content-Security-Policy": PASSKEY_CSP}
    return page(
        ctx,
        "mfa.html",
        status=status,
        headers=headers,
        passkeys=passkeys,
        lang=lang,
        t=t,
        error=error,
        done=bool(pending.params.get("done")),
        csrf=csrf_token(ctx, MFA_PURPOSE, pending.raw_id),
        action=ctx.path("/login/mfa"),
    )


def _refused(ctx: Context, request: Request, pending: Pending, refusal) -> Response:
    """The second-factor page again, saying why the code was not checked (429 over the limit,
    503 when its counters cannot be reached) and when to retry."""
    headers = {"Retry-After": str(refusal.retry_after)}
    return _mfa_page(ctx, request, pending, refusal.status, refusal.message, headers=headers)


async def mfa_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    pending = await _second_factor_step(ctx, request)
    if pending is None:
        return error_page(ctx, EXPIRED, title="Sign-in expired")
    if pending.params.get("step") == mfa.ENROL and not pending.params.get("done"):
        return see_other(ctx.path("/account/security/totp"))
    if offered(ctx.settings.issuer) and await ctx.store.passkey_ids(pending.interaction.user_id):
        pending = Pending(pending.raw_id, replace(pending.interaction, params={**pending.params, "passkeys": True}))
    return _mfa_page(ctx, request, pending)


async def mfa_post(request: Request) -> Response:
    """Check the code (a TOTP code, once per time step, or a recovery code, once); 5 wrong codes
    per account in the window are answered as ordinary failures, then 429 with Retry-After."""
    ctx: Context = request.app.state.ctx
    pending = await _second_factor_step(ctx, request)
    if pending is None:
        return error_page(ctx, EXPIRED, title="Sign-in expired")
    _, t = language(request)
    try:
        form = await read_form(request)
    except OAuthError as exc:
        return _mfa_page(ctx, request, pending, 400, exc.description or t("mfa.bad_code"))
    if not csrf_ok(ctx, MFA_PURPOSE, pending.raw_id, form.get("csrf_token")):
        return _mfa_page(ctx, request, pending, 403, t("err.csrf"))
    sign_in = pending.interaction.sign_in
    if pending.params.get("done"):  # the factor was set up and confirmed in this sign-in
        return await continue_sign_in(ctx, request, unwrap_second_factor(pending), sign_in)
    if pending.params.get("step") != mfa.VERIFY:
        return see_other(ctx.path("/account/security/totp"))
    if mfa.parse_code(form.get("code")) is None:
        return _mfa_page(ctx, request, pending, 400, t("mfa.bad_code"))
    limiter = ctx.limiter
    if limiter is not None:
        refusal = await limiter.before_second_factor(sign_in.user_id)
        if refusal is not None:
            return _refused(ctx, request, pending, refusal)
    method = await ctx.factors.verify(sign_in.user_id, form.get("code"))
    if method is None:
        if limiter is not None:
            refusal = await limiter.wrong_second_factor(sign_in.user_id)
            if refusal is not None:
                return _refused(ctx, request, pending, refusal)
        user = await ctx.store.user(sign_in.user_id)
        await ctx.events.record(
            events.MFA_FAILURE,
            username=user.username if user else None,
            ip=client_ip(request, ctx.settings.trusted_proxies),
            detail="wrong or reused code",
        )
        return _mfa_page(ctx, request, pending, 401, t("mfa.wrong_code"))
    inner = unwrap_second_factor(pending)
    user = await ctx.store.user(sign_in.user_id)
    await ctx.events.record(  # the sign-in succeeds with its second factor, not before
        events.LOGIN_SUCCESS,
        username=user.username if user else None,
        client_id=inner.params.get("client_id"),
        ip=client_ip(request, ctx.settings.trusted_proxies),
        detail=f"password and {method}",
    )
    return await continue_sign_in(ctx, request, inner, mfa.with_second_factor(sign_in, method))


# -- setting up an authenticator app -------------------------------------------------------------
@dataclass(frozen=True)
class Enroller:
    """Who is setting up a factor: a signed-in user (`session`) or a sign-in waiting for one (`pending`)."""

    user: User
    session: CurrentSession | None = None
    pending: Pending | None = None

    @property
    def bound_to(self) -> str:
        return self.session.raw_id if self.session is not None else self.pending.raw_id


async def _enroller(ctx: Context, request: Request) -> Enroller | None:
    pending = await _second_factor_step(ctx, request)
    if pending is not None and pending.params.get("step") == mfa.ENROL and not pending.params.get("done"):
        user = await ctx.store.user(pending.interaction.user_id)
        return Enroller(user, pending=pending) if user is not None else None
    session = await current_session(ctx, request)
    if session is None:
        return None
    user = await ctx.store.user(session.user_id)
    return Enroller(user, session=session) if user is not None else None


def _next(ctx: Context, request: Request) -> str:
    try:
        return _local_next(ctx, query_params(request).get("next"))
    except OAuthError:
        return ctx.path("/account")


def _sign_in_again(ctx: Context, request: Request) -> Response:
    return see_other(detour(ctx.path("/login"), request, ctx.path("/")))


def _enrol_page(ctx, request, who: Enroller, enrolment, status: int = 200, error: str | None = None) -> Response:
    lang, t = language(request)
    return page(
        ctx,
        "totp_enrol.html",
        status=status,
        lang=lang,
        t=t,
        error=error,
        enrolment=enrolment,
        required=who.pending is not None,
        csrf=csrf_token(ctx, TOTP_PURPOSE, who.bound_to),
        action=request.url.path + (f"?{request.url.query}" if request.url.query else ""),
    )


async def totp_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    who = await _enroller(ctx, request)
    if who is None:
        return _sign_in_again(ctx, request)
    if any(f.kind == TOTP for f in await ctx.factors.factors(who.user.id)):
        lang, t = language(request)
        return page(ctx, "totp_done.html", lang=lang, t=t, codes=None, already=True, account=ctx.path("/account"))
    return _enrol_page(ctx, request, who, await ctx.factors.start_totp(who.user))


async def totp_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    who = await _enroller(ctx, request)
    if who is None:
        return _sign_in_again(ctx, request)
    lang, t = language(request)
    try:
        form = await read_form(request)
    except OAuthError as exc:
        return error_page(ctx, exc.description or t("mfa.bad_code"), title=t("totp.title"))
    if not csrf_ok(ctx, TOTP_PURPOSE, who.bound_to, form.get("csrf_token")):
        return error_page(ctx, t("err.csrf"), status=403, title=t("totp.title"))
    factor_id = form.get("factor", "")
    codes = await ctx.factors.confirm_totp(who.user.id, factor_id, form.get("code"))
    if codes is None:
        enrolment = await ctx.factors.pending_enrolment(who.user, factor_id)
        if enrolment is None:
            return see_other(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
        message = t("mfa.bad_code") if mfa.parse_code(form.get("code")) is None else t("totp.wrong_code")
        return _enrol_page(ctx, request, who, enrolment, 400, message)
    await ctx.events.record(
        events.MFA_ENROLLED,
        username=who.user.username,
        ip=client_ip(request, ctx.settings.trusted_proxies),
        detail="totp",
    )
    if who.pending is None:
        return page(ctx, "totp_done.html", lang=lang, t=t, codes=codes, already=False, account=_next(ctx, request))
    # This sign-in's second factor is the code just confirmed: it goes on from a new interaction
    # id that holds the sign-in with it ("Continue" posts to /login/mfa).
    pending = who.pending
    if not await ctx.store.finish_interaction(pending.id_hash):
        return error_page(ctx, EXPIRED, title="Sign-in expired")
    sign_in = mfa.with_second_factor(pending.interaction.sign_in, mfa.OTP)
    done = new_interaction(ctx, MFA_KIND, {**pending.params, "done": True}, sign_in)
    response = page(
        ctx,
        "totp_done.html",
        lang=lang,
        t=t,
        codes=codes,
        already=False,
        continue_action=ctx.path("/login/mfa"),
        csrf=csrf_token(ctx, MFA_PURPOSE, done.raw_id),
    )
    await begin_interaction(ctx, response, done)
    return response
