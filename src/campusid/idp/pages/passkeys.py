"""Passkey ceremonies through the pages (docs/mfa.md): `button#passkey-enrol` on /account adds a
passkey, `button#passkey-signin` on the login page signs in with a passkey alone, and
`button#passkey-verify` on the second-factor page uses one as the second factor.

The page's script (static/passkey.js) asks `POST /passkey/options` for the ceremony's options,
lets the browser's authenticator answer, and posts that answer in `form#passkey-form` to
`POST /passkey`, a plain form post answered like the other forms (303 on success, the page with
a message otherwise). Each challenge is kept server-side under a random handle bound to the page's
session or interaction, and is consumed by its first use (single use).
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from campusid import i18n
from campusid.i18n import N_
from campusid.idp import events
from campusid.idp.context import Context
from campusid.idp.crypto import new_token, token_hash
from campusid.idp.errors import RequestError
from campusid.idp.pages.login import ACCOUNT_DISABLED, signed_in
from campusid.idp.ratelimit import client_ip
from campusid.idp.signin import mfa
from campusid.idp.signin import pending as stages
from campusid.idp.signin.authn import ACR_MFA, new_sid
from campusid.idp.signin.passkeys import MAX_CREDENTIAL_JSON, PasskeyRefused, RelyingParty, credential_id_of, offered
from campusid.idp.store.errors import Conflict
from campusid.idp.store.factors import PASSKEY
from campusid.idp.store.rows import Factor, Interaction, SignIn
from campusid.idp.web.browser import csrf_ok, current_session, find_pending, handle_of, pending_csrf_ok
from campusid.idp.web.http import is_form, json_response, read_body, read_form
from campusid.idp.web.language import chosen
from campusid.idp.web.params import parse_urlencoded
from campusid.idp.web.render import FORM_EXPIRED, UNREADABLE, error_page, page_endpoint

KIND = "webauthn"  # the interaction kind that keeps a ceremony's challenge
MODES = ("enrol", "signin", "verify")
PURPOSES = {"enrol": "account", "signin": "login", "verify": "mfa"}
TITLE = N_("Passkey")


async def _bound(ctx: Context, request: Request, mode: str, token: str | None):
    """(what the ceremony is bound to, the person, the pending sign-in) for a form whose CSRF token
    is `token`, or (None, None, None) when it names nothing this mode may use: enrol is bound to
    the session, signin to a sign-in at the login, verify to one at its second factor."""
    if mode == "enrol":
        session = await current_session(ctx, request)
        if session is None or not csrf_ok(ctx, PURPOSES[mode], session.raw_id, token):
            return None, None, None
        return session.raw_id, session.user_id, None
    at = await find_pending(ctx, request, handle_of(token))
    if at is None or not pending_csrf_ok(ctx, PURPOSES[mode], at, token):
        return None, None, None
    if mode == "verify":
        if at.stage != stages.SECOND_FACTOR or at.step != stages.VERIFY:
            return None, None, None
        return at.id_hash, at.user_id, at
    if at.stage != stages.LOGIN:
        return None, None, None
    return at.id_hash, None, at


def _refusal(request: Request, exc: RequestError) -> Response:
    """A refused ceremony for the page's script: the protocol's error (RFC 6749 5.2 shape) and
    `message`, what the page shows, in the page's language (its `error_description` is ASCII)."""
    ctx: Context = request.app.state.ctx
    body = {**exc.body(), "message": i18n.translator(chosen(ctx, request)).text(exc.message)}
    return json_response(body, exc.status, {"Cache-Control": "no-store", **exc.headers})


async def options_post(request: Request) -> Response:
    """The options of a ceremony for the page's script (JSON; a refusal's `message` is what the
    page shows)."""
    try:
        return await _options(request)
    except RequestError as exc:
        return _refusal(request, exc)


async def _options(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    if not offered(ctx.settings.issuer):
        raise RequestError(N_("Passkeys need the service to be reached by a host name."), status=404)
    form = await read_form(request)
    mode = form.get("mode")
    if mode not in MODES:
        raise RequestError(N_("Unknown passkey step."))
    bound, user_id, _ = await _bound(ctx, request, mode, form.get("csrf_token"))
    if bound is None:
        raise RequestError(N_("This page has expired. Reload it and try again."), status=403)
    rp = RelyingParty.of(ctx.settings.issuer)
    if mode == "enrol":
        user = await ctx.store.users.get(user_id)
        challenge, options = rp.registration_options(
            user.id, user.username, user.name, await ctx.store.factors.passkey_ids(user.id)
        )
    elif mode == "verify":
        challenge, options = rp.authentication_options(await ctx.store.factors.passkey_ids(user_id))
    else:
        challenge, options = rp.authentication_options(None)
    handle = new_token(32)
    now = int(time.time())
    params = {"challenge": challenge, "mode": mode, "bound": token_hash(bound), "user_id": user_id}
    await ctx.store.sessions.create_interaction(
        Interaction(token_hash(handle), KIND, params, None, None, now, now + 300)
    )
    return json_response({"handle": handle, "publicKey": options}, headers={"Cache-Control": "no-store"})


@page_endpoint
async def passkey_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    if not is_form(request):
        raise RequestError(UNREADABLE)
    form = parse_urlencoded(await read_body(request), max_value=MAX_CREDENTIAL_JSON)  # a credential is long
    mode = form.get("mode")
    if mode not in MODES:
        return error_page(ctx, request, UNREADABLE, title=TITLE)
    bound, user_id, at = await _bound(ctx, request, mode, form.get("csrf_token"))
    if bound is None:
        return error_page(ctx, request, FORM_EXPIRED, status=403, title=TITLE)
    handle = form.get("handle", "")
    ceremony = (
        await ctx.store.sessions.interaction(token_hash(handle), int(time.time())) if 0 < len(handle) <= 128 else None
    )
    # single use: the first post that finishes the challenge is the only one that may use it
    if (
        ceremony is None
        or ceremony.kind != KIND
        or ceremony.params.get("mode") != mode
        or ceremony.params.get("bound") != token_hash(bound)
        or not await ctx.store.sessions.finish_interaction(ceremony.id_hash)
    ):
        return _refused(ctx, request, at, N_("This passkey request has expired or was already used. Try again."))
    rp = RelyingParty.of(ctx.settings.issuer)
    credential = form.get("credential", "")
    challenge = ceremony.params["challenge"]
    now = int(time.time())
    try:
        if mode == "enrol":
            return await _enrol(ctx, request, rp, credential, challenge, user_id, now)
        factor = await ctx.store.factors.passkey_by_credential(credential_id_of(credential))
        if factor is None or (mode == "verify" and factor.user_id != user_id):
            raise PasskeyRefused(N_("This passkey is not registered here."))
        new_count, method = rp.verify_authentication(credential, challenge, factor.public_key, factor.sign_count)
        if not await ctx.store.factors.use_passkey(factor.id, factor.sign_count, new_count, now):
            raise PasskeyRefused(N_("This passkey was just used. Try again."))
    except PasskeyRefused as exc:
        user = await ctx.store.users.get(user_id) if user_id else None
        await ctx.events.record(
            events.MFA_FAILURE,
            username=user.username if user else None,
            ip=client_ip(request, ctx.settings.trusted_proxies),
            detail=f"passkey {mode}: {exc}",
        )
        return _refused(ctx, request, at, exc.args[0] if exc.args else str(exc))
    if mode == "verify":
        return await signed_in(ctx, request, at, mfa.with_second_factor(at.sign_in, method))
    owner = await ctx.store.users.get(factor.user_id)
    if owner is None or owner.disabled:
        return _refused(ctx, request, at, ACCOUNT_DISABLED)
    # a passkey alone, with user verification: possession and a PIN or biometric (RFC 8176 "mfa")
    sign_in = SignIn(user_id=factor.user_id, auth_time=now, sid=new_sid(), amr=f"{method} {mfa.MFA}", acr=ACR_MFA)
    return await signed_in(ctx, request, at, sign_in)


async def _enrol(
    ctx: Context, request: Request, rp: RelyingParty, credential: str, challenge: str, user_id: str, now: int
) -> Response:
    credential_id, public_key, sign_count = rp.verify_registration(credential, challenge)
    factor = Factor(
        id=new_token(16),
        user_id=user_id,
        kind=PASSKEY,
        label="Passkey",
        secret_enc=None,
        credential_id=credential_id,
        public_key=public_key,
        sign_count=sign_count,
        last_step=None,
        created_at=now,
        confirmed_at=now,
        last_used_at=None,
    )
    try:
        await ctx.store.factors.add_passkey(factor)
    except Conflict:
        raise PasskeyRefused(N_("This passkey is registered already.")) from None
    user = await ctx.store.users.get(user_id)
    await ctx.events.record(
        events.MFA_ENROLLED,
        username=user.username if user else None,
        ip=client_ip(request, ctx.settings.trusted_proxies),
        detail="passkey",
    )
    return RedirectResponse(ctx.path("/account?done=passkey"), status_code=303, headers={"Cache-Control": "no-store"})


def _refused(ctx: Context, request: Request, at, message: str) -> Response:
    return error_page(ctx, request, message, status=400, title=TITLE, at=at)
