"""The device page (RFC 8628 3.3): a person enters the user code a device showed them, signs in if
needed (the login form and its interaction), and allows or denies the app on a consent page that
names it and warns them to sign in only a device they recognise (RFC 8628 5.4, remote phishing).

    GET/POST /device          the code entry form (`form#device-form`, input `user_code`)
    GET/POST /device/consent  allow or deny (`form#consent-form`), once

Wrong codes count against the client IP's submissions, as wrong passwords do, and past the limit
every submission is 429 until the window passes (RFC 8628 5.1). The entry form's CSRF token is
bound to a cookie of its own (nobody need be signed in yet); the consent form's to the
interaction. Pages are English or Simplified Chinese by Accept-Language.
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import i18n
from campusid.idp.apps.states import ACTIVE
from campusid.idp.crypto import new_token
from campusid.idp.protocol import device, mfa
from campusid.idp.protocol.errors import OAuthError
from campusid.idp.ratelimit import Refusal
from campusid.idp.store.devices import APPROVED, DENIED
from campusid.idp.store.rows import Client, DeviceCode, SignIn
from campusid.idp.web import cookies
from campusid.idp.web.context import Context
from campusid.idp.web.http import language, page, query_params, read_form, see_other
from campusid.idp.web.sessions import (
    Pending,
    begin_interaction,
    clear_interaction_cookie,
    cookie_name,
    csrf_ok,
    csrf_token,
    current_interaction,
    current_session,
    new_interaction,
    new_session,
    previous_session_hash,
    set_interaction_cookie,
    set_session_cookie,
)

KIND = "device"  # the interaction kind of a sign-in begun on /device
ENTRY_COOKIE = "campusid_device"  # binds the entry form's CSRF token to this browser
Translate = Callable[[str], str]


def _fill(text: str, **values: str) -> list[tuple[str, bool]]:
    """`text` (ours) with each {name} replaced by a value (the user's or app's), as pieces the
    template prints escaped, the values in bold: [(piece, is_value), …]."""
    pieces: list[tuple[str, bool]] = []
    for piece in re.split(r"(\{[a-z]+\})", text):
        name = piece[1:-1] if piece.startswith("{") and piece.endswith("}") else None
        if name in values:
            pieces.append((values[name], True))
        elif piece:
            pieces.append((piece, False))
    return pieces


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
    lang, t = language(request)
    name = cookie_name(ctx, ENTRY_COOKIE)
    raw = request.cookies.get(name)
    fresh = not raw or len(raw) > 128
    if fresh:
        raw = new_token(32)
    response = page(
        ctx,
        "device.html",
        status=status,
        headers=headers,
        lang=lang,
        t=t,
        error=error,
        user_code=user_code,
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
    except OAuthError as exc:
        _, t = language(request)
        return _entry_page(ctx, request, status=400, error=f"{t('device.err.form')} {exc.description}")
    return _entry_page(ctx, request, user_code=_prefill(typed))


def _limited(ctx: Context, request: Request, refusal: Refusal) -> Response:
    """429 over the per-IP limit, 503 when its counters cannot be reached; when to retry."""
    _, t = language(request)
    headers = {"Retry-After": str(refusal.retry_after)}
    if refusal.status != 429:
        return _entry_page(ctx, request, status=refusal.status, error=refusal.message, headers=headers)
    message = t("device.err.limited").replace("{minutes}", str(max(1, math.ceil(refusal.retry_after / 60))))
    return _entry_page(ctx, request, status=429, error=message, headers=headers)


async def _wrong_code(ctx: Context, request: Request, key: str, typed: str) -> Response:
    """Count a wrong code against the client IP and say what was wrong."""
    limiter = ctx.limiter
    if limiter is not None:
        blocked = await limiter.wrong_user_code(request)
        if blocked is not None:
            return _limited(ctx, request, blocked)
    _, t = language(request)
    shown = typed if len(typed) <= device.MAX_TYPED and typed.isprintable() else ""
    return _entry_page(ctx, request, status=400, error=t(key), user_code=shown)


async def device_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    _, t = language(request)
    try:
        form = await read_form(request)
    except OAuthError as exc:
        status = getattr(exc, "status", 400)
        return _entry_page(ctx, request, status=status, error=f"{t('device.err.form')} {exc.description}")
    raw = request.cookies.get(cookie_name(ctx, ENTRY_COOKIE))
    if not raw or len(raw) > 128 or not csrf_ok(ctx, "device", raw, form.get("csrf_token")):
        return _entry_page(ctx, request, status=403, error=t("device.err.csrf"))
    limiter = ctx.limiter
    if limiter is not None:
        blocked = await limiter.before_user_code(request)
        if blocked is not None:
            return _limited(ctx, request, blocked)
    typed = form.get("user_code", "")
    try:
        canonical = device.normalize(typed)
    except device.MalformedUserCode as exc:
        return await _wrong_code(ctx, request, f"device.err.{exc.reason}", typed)
    code = await ctx.store.pending_device_code_by_user_code(ctx.user_codes.digest(canonical), int(ctx.clock()))
    client = await ctx.store.client(code.client_id) if code is not None else None
    if code is None or client is None or client.state != ACTIVE:
        return await _wrong_code(ctx, request, "device.err.unknown", typed)
    params = {"device_id": code.id, "client_id": client.client_id, "client_name": client.name}
    session = await current_session(ctx, request)
    # Signed in: straight on to the consent page; otherwise the login form, whose success leads there.
    response = see_other(ctx.path("/device/consent" if session is not None else "/login"))
    await begin_interaction(ctx, response, new_interaction(ctx, KIND, params))
    return response


async def complete_device_login(ctx: Context, request: Request, interaction: Pending, sign_in: SignIn) -> Response:
    """After the password of a sign-in begun on /device: the interaction ends, the session starts
    and the consent step (a new interaction id, as for the code flow) is written in one go."""
    response = see_other(ctx.path("/device/consent"))
    next_step = new_interaction(ctx, KIND, interaction.params, sign_in)
    session_raw, session = new_session(ctx, sign_in, request)
    finished = await ctx.store.complete_login(
        interaction.id_hash, session, previous_session_hash(ctx, request), next_interaction=next_step.interaction
    )
    if not finished:
        return _message(ctx, request, "gone", status=400)
    set_interaction_cookie(ctx, response, next_step.raw_id)
    set_session_cookie(ctx, response, session_raw)
    return response


# -- consent ----------------------------------------------------------------------------------
def _message(ctx: Context, request: Request, outcome: str, status: int = 200, app: str = "") -> Response:
    lang, t = language(request)
    return page(
        ctx,
        "device_message.html",
        status=status,
        lang=lang,
        t=t,
        outcome=outcome,
        title=t(f"device.{outcome}.title"),
        text=_fill(t(f"device.{outcome}.text"), app=app),
    )


async def _consent_context(ctx: Context, request: Request) -> tuple[Pending, SignIn, DeviceCode, Client] | Response:
    """The pending device sign-in of this browser, who is deciding, the device code and its app;
    or the response that ends the visit (sign in first, or it can no longer continue)."""
    pending = await current_interaction(ctx, request)
    if pending is None or pending.kind != KIND:
        return _message(ctx, request, "gone", status=400)
    subject = pending.interaction.sign_in
    if subject is None:
        session = await current_session(ctx, request)
        if session is None:
            return see_other(ctx.path("/login"))  # the interaction waits; the login form leads back
        subject = session.sign_in
    code = await ctx.store.pending_device_code(pending.params["device_id"], int(ctx.clock()))
    client = await ctx.store.client(pending.params["client_id"])
    usable = client is not None and client.state == ACTIVE and device.SHORT_NAME in client.granted_grant_types
    if code is None or not usable or code.client_id != client.client_id:
        return _message(ctx, request, "gone", status=400)
    if pending.interaction.sign_in is None and not mfa.session_satisfies(
        subject, app_requires=client.require_mfa, acr_mfa=False
    ):
        return see_other(ctx.path("/login"))  # this app needs a second factor: sign in again with it
    return pending, subject, code, client


def _consent_step(step: Callable[..., Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """A consent handler that runs `step` with the context of :func:`_consent_context`, or ends the visit."""

    async def handler(request: Request) -> Response:
        ctx: Context = request.app.state.ctx
        found = await _consent_context(ctx, request)
        return found if isinstance(found, Response) else await step(ctx, request, *found)

    handler.__name__ = step.__name__
    return handler


@_consent_step
async def device_consent_get(
    ctx: Context, request: Request, pending: Pending, subject: SignIn, code: DeviceCode, client: Client
) -> Response:
    lang, t = language(request)
    user = await ctx.store.user(subject.user_id)
    return page(
        ctx,
        "device_consent.html",
        lang=lang,
        t=t,
        title=_fill(t("device.consent.title"), app=client.name),
        lead=_fill(t("device.consent.lead"), app=client.name, name=user.name if user else ""),
        scopes=[(s, t(f"scope.{s}") if i18n.has(f"scope.{s}") else s) for s in code.scope.split()],
        csrf=csrf_token(ctx, "device-consent", pending.raw_id),
        action=ctx.path("/device/consent"),
    )


@_consent_step
async def device_consent_post(
    ctx: Context, request: Request, pending: Pending, subject: SignIn, code: DeviceCode, client: Client
) -> Response:
    _, t = language(request)
    try:
        form = await read_form(request)
    except OAuthError as exc:
        return _entry_page(ctx, request, status=400, error=f"{t('device.err.form')} {exc.description}")
    if not csrf_ok(ctx, "device-consent", pending.raw_id, form.get("csrf_token")):
        return _entry_page(ctx, request, status=403, error=t("device.err.csrf"))
    decision = form.get("decision")
    if decision not in ("allow", "deny"):
        return _entry_page(ctx, request, status=400, error=f"{t('device.err.form')} decision must be allow or deny")
    # Once: the interaction ends for one request only, and the code is decided only while pending.
    if not await ctx.store.finish_interaction(pending.id_hash):
        return _message(ctx, request, "gone", status=400)
    status = APPROVED if decision == "allow" else DENIED
    if not await ctx.store.decide_device_code(code.id, status, subject, int(ctx.clock())):
        response = _message(ctx, request, "gone", status=400)
    else:
        response = _message(ctx, request, "allowed" if status == APPROVED else "denied", app=client.name)
    clear_interaction_cookie(ctx, response)
    return response
