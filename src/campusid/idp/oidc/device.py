"""The device page (RFC 8628 3.3): a person enters the user code a device showed them, signs in if
needed (the one login page), and allows or denies the app on a consent page that
names it and warns them to sign in only a device they recognise (RFC 8628 5.4, remote phishing).

    GET/POST /device   the code entry form (`form#device-form`, input `user_code`); then the one
                       login page if needed, and the one consent page (`form#consent-form`), once

Wrong codes count against the client IP's submissions, as wrong passwords do, and past the limit
every submission is 429 until the window passes (RFC 8628 5.1). The entry form's CSRF token is
bound to a cookie of its own (nobody need be signed in yet); the sign-in that follows is a
pending sign-in of the kind `oidc.device` (DeviceContinuation), whose consent names the device.
Pages speak the reader's language (web/language.py).
"""

from __future__ import annotations

import math

from starlette.requests import Request
from starlette.responses import Response

from campusid.i18n import N_, N_plural
from campusid.idp.apps.states import ACTIVE
from campusid.idp.context import Context
from campusid.idp.crypto import new_token
from campusid.idp.errors import RequestError
from campusid.idp.oidc.rules import device_grant as device
from campusid.idp.oidc.services import oidc
from campusid.idp.ratelimit import Refusal
from campusid.idp.signin import pending as stages
from campusid.idp.signin import policy
from campusid.idp.signin.consent import ConsentAsk
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.signin.policy import AppPolicy
from campusid.idp.store.devices import APPROVED, DENIED
from campusid.idp.store.rows import Client, DeviceCode, SignIn
from campusid.idp.web import cookies
from campusid.idp.web.browser import (
    cookie_name,
    csrf_ok,
    csrf_token,
    current_session,
    keep_binder,
    new_pending,
    new_session,
    next_stage,
    previous_session_hash,
    set_session_cookie,
    with_handle,
)
from campusid.idp.web.http import query_params, read_form, see_other
from campusid.idp.web.render import page, page_endpoint

KIND = "oidc.device"  # the pending sign-ins begun on /device
ENTRY_COOKIE = "campusid_device"  # binds the entry form's CSRF token to this browser
# What the entry form says about a code it cannot take, by MalformedUserCode's reason.
WRONG_CODE = {
    "empty": N_("Enter the code your device shows."),
    "too_long": N_("That is far too long to be a code. Codes have 8 letters, like BCDF-GHJK."),
    "malformed": N_("That is not a code from a device. Codes have 8 letters (no vowels, no digits), like BCDF-GHJK."),
    "unknown": N_(
        "This code is not valid: it may be mistyped, expired or already used. Check the device and try again."
    ),
}
EXAMPLE_CODE = "BCDF-GHJK"


# -- the code entry form ----------------------------------------------------------------------
def _entry_page(
    ctx: Context,
    request: Request,
    *,
    status: int = 200,
    error: str | None = None,
    user_code: str = "",
    headers: dict | None = None,
) -> Response:
    name = cookie_name(ctx, ENTRY_COOKIE)
    raw = request.cookies.get(name)
    fresh = not raw or len(raw) > 128
    if fresh:
        raw = new_token(32)
    response = page(
        ctx,
        request,
        "device.html",
        status=status,
        headers=headers,
        after_post=ctx.path("/device"),
        error=error,
        user_code=user_code,
        example_code=EXAMPLE_CODE,
        csrf=csrf_token(ctx, "device", raw),
        action=ctx.path("/device"),
    )
    if fresh:
        cookies.set_cookie(response, name, raw, ctx.settings.session_ttl, secure=ctx.settings.secure_cookies)
    return response


def _prefill(typed: str | None) -> str:
    """verification_uri_complete (RFC 8628 3.3.1) fills the form in, never submits it: the
    person still confirms the code (5.4). Only a well-formed code is shown back."""
    try:
        return device.display(device.normalize(typed or ""))
    except device.MalformedUserCode:
        return ""


async def device_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    try:
        typed = query_params(request).get("user_code")
    except RequestError as exc:
        return _unreadable(request, exc)
    return _entry_page(ctx, request, user_code=_prefill(typed))


def _limited(ctx: Context, request: Request, refusal: Refusal) -> Response:
    """429 over the per-IP limit, 503 when its counters cannot be reached; when to retry."""
    headers = {"Retry-After": str(refusal.retry_after)}
    if refusal.status != 429:
        return _entry_page(ctx, request, status=refusal.status, error=refusal.message, headers=headers)
    minutes = max(1, math.ceil(refusal.retry_after / 60))
    message = N_plural(
        "Too many wrong codes were entered from your network. For your security, wait %(minutes)s minute "
        "and try again.",
        "Too many wrong codes were entered from your network. For your security, wait %(minutes)s minutes "
        "and try again.",
        minutes,
        minutes=minutes,
    )
    return _entry_page(ctx, request, status=429, error=message, headers=headers)


async def _wrong_code(ctx: Context, request: Request, reason: str, typed: str) -> Response:
    """Count a wrong code against the client IP and say what was wrong (WRONG_CODE[reason])."""
    limiter = ctx.limiter
    if limiter is not None:
        blocked = await limiter.wrong_user_code(request)
        if blocked is not None:
            return _limited(ctx, request, blocked)
    shown = typed if len(typed) <= device.MAX_TYPED and typed.isprintable() else ""
    return _entry_page(ctx, request, status=400, error=WRONG_CODE[reason], user_code=shown)


def _unreadable(request: Request, exc: RequestError) -> Response:
    """The entry form again, saying what was wrong with what was sent (oversized, not UTF-8, twice)."""
    message = N_("The form could not be read: %(reason)s", reason=exc.message)
    return _entry_page(request.app.state.ctx, request, status=exc.status, error=message)


@page_endpoint(render=_unreadable)
async def device_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    form = await read_form(request)
    raw = request.cookies.get(cookie_name(ctx, ENTRY_COOKIE))
    if not raw or len(raw) > 128 or not csrf_ok(ctx, "device", raw, form.get("csrf_token")):
        expired = N_("The form expired or was not sent from this page. Reload the page and enter the code again.")
        return _entry_page(ctx, request, status=403, error=expired)
    limiter = ctx.limiter
    if limiter is not None:
        blocked = await limiter.before_user_code(request)
        if blocked is not None:
            return _limited(ctx, request, blocked)
    typed = form.get("user_code", "")
    try:
        canonical = device.normalize(typed)
    except device.MalformedUserCode as exc:
        return await _wrong_code(ctx, request, exc.reason, typed)
    code = await ctx.store.devices.pending_by_user_code(oidc(ctx).user_codes.digest(canonical), int(ctx.clock()))
    client = await ctx.store.apps.get(code.client_id) if code is not None else None
    if code is None or client is None or client.state != ACTIVE:
        return await _wrong_code(ctx, request, "unknown", typed)
    # Signed in in a way this app accepts: straight on to the consent page; otherwise the login
    # page, whose success leads there (DeviceContinuation.signed_in).
    session = await current_session(ctx, request)
    usable = session is not None and policy.session_satisfies(session.sign_in, _policy(client))
    begun, binder = new_pending(
        ctx,
        request,
        KIND,
        {"device_id": code.id},
        stages.CONSENT if usable else stages.LOGIN,
        session.sign_in if usable else None,
        client_id=client.client_id,
        client_name=client.name,
    )
    await ctx.store.sessions.create_interaction(begun.row)
    response = see_other(with_handle(ctx.path("/consent" if usable else "/login"), begun))
    keep_binder(ctx, response, binder)
    return response


def _policy(client: Client) -> AppPolicy:
    return AppPolicy(app_requires_mfa=bool(client.require_mfa))


def _message(
    ctx: Context, request: Request, at: PendingSignIn, outcome: str, status: int = 200, app: str = ""
) -> Response:
    """The end of a device's sign-in: `outcome` allowed, denied, or gone (it can no longer go on)."""
    return page(
        ctx,
        request,
        "device_message.html",
        status=status,
        asked=at.locale,
        after_post=ctx.path("/device"),
        outcome=outcome,
        app=app,
    )


# -- after the sign-in (signin/continuations.py) ------------------------------------------------
class DeviceContinuation:
    """What follows a sign-in begun on /device: the consent page naming the app and warning about
    devices one does not recognise (RFC 8628 5.4), then the device code approved or denied, once."""

    kind = KIND

    async def policy(self, ctx: Context, at: PendingSignIn) -> AppPolicy:
        client = await ctx.store.apps.get(at.client_id)
        return _policy(client) if client is not None else policy.NO_POLICY

    async def signed_in(self, ctx: Context, request: Request, at: PendingSignIn, sign_in: SignIn) -> Response:
        """The pending sign-in ends, the session starts and the consent step (a new handle, as for
        the code flow) is written in one go."""
        next_step = next_stage(ctx, request, at, stages.CONSENT, sign_in)
        session_raw, session = new_session(ctx, sign_in, request)
        finished = await ctx.store.sessions.complete_login(
            at.id_hash, session, previous_session_hash(ctx, request), next_interaction=next_step.row
        )
        if not finished:
            return _message(ctx, request, at, "gone", status=400)
        response = see_other(with_handle(ctx.path("/consent"), next_step))
        set_session_cookie(ctx, response, session_raw)
        return response

    async def _usable(self, ctx: Context, at: PendingSignIn) -> tuple[DeviceCode, Client] | None:
        code = await ctx.store.devices.pending(at.request["device_id"], int(ctx.clock()))
        client = await ctx.store.apps.get(at.client_id)
        usable = client is not None and client.state == ACTIVE and device.SHORT_NAME in client.granted_grant_types
        if code is None or not usable or code.client_id != client.client_id:
            return None
        return code, client

    async def consent(
        self, ctx: Context, request: Request, at: PendingSignIn, subject: SignIn
    ) -> ConsentAsk | Response:
        found = await self._usable(ctx, at)
        if found is None:
            return _message(ctx, request, at, "gone", status=400)
        code, client = found
        return ConsentAsk(client.name, tuple(code.scope.split()), device=True)

    async def decided(
        self, ctx: Context, request: Request, at: PendingSignIn, subject: SignIn, allow: bool
    ) -> Response:
        found = await self._usable(ctx, at)
        status = APPROVED if allow else DENIED
        if found is None or not await ctx.store.devices.decide(found[0].id, status, subject, int(ctx.clock())):
            return _message(ctx, request, at, "gone", status=400)
        return _message(ctx, request, at, "allowed" if allow else "denied", app=found[1].name)
