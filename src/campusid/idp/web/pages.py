"""Login, consent and logout pages. Forms carry CSRF tokens bound to the
interaction (login, consent) or the session (logout); credential POSTs answer with 303."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import events
from campusid.idp.directory import DirectoryUnavailable
from campusid.idp.protocol import mfa
from campusid.idp.protocol import scopes as scope_rules
from campusid.idp.protocol.authn import DIRECTORY, password_checker, password_sign_in
from campusid.idp.protocol.errors import AccessDenied, OAuthError
from campusid.idp.ratelimit import client_ip
from campusid.idp.store.errors import Conflict
from campusid.idp.store.rows import Client, SignIn
from campusid.idp.web import device
from campusid.idp.web.authorize import (
    code_grant,
    consent_needed,
    error_redirect,
    issue_code,
    needs_consent,
    remembered_scopes,
)
from campusid.idp.web.context import Context
from campusid.idp.web.http import error_page, page, query_params, read_form, see_other
from campusid.idp.web.login_form import login_page
from campusid.idp.web.sessions import (
    Pending,
    begin_interaction,
    clear_interaction_cookie,
    csrf_ok,
    csrf_token,
    current_interaction,
    current_session,
    finish_interaction,
    new_interaction,
    new_session,
    previous_session_hash,
    set_interaction_cookie,
    set_session_cookie,
    start_session,
)

MAX_USERNAME = 64
MAX_PASSWORD = 1024
DIRECTORY_RETRY_AFTER = 30

log = logging.getLogger("campusid.login")


def _local_next(ctx: Context, value: str | None) -> str:
    """Only a path on this server may follow a login (no open redirect)."""
    if value and value.startswith("/") and not value.startswith("//") and "\\" not in value:
        parts = urlsplit(value)
        if not parts.scheme and not parts.netloc:
            return value
    return ctx.path("/")


async def login_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    interaction = await current_interaction(ctx, request)
    try:
        q = query_params(request)
    except OAuthError:
        q = {}
    if interaction is None or ("next" in q and interaction.kind != "authorize"):
        response = see_other(ctx.path("/login"))
        await begin_interaction(ctx, response, new_interaction(ctx, "local", {"next": _local_next(ctx, q.get("next"))}))
        return response
    return login_page(ctx, interaction)


async def login_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    try:
        form, form_error = await read_form(request), None
    except OAuthError as exc:
        form, form_error = {}, exc
    username = form.get("username", "").strip()
    password = form.get("password", "")
    # One statement: the interaction and the user the form names (no avoidable round trips).
    interaction = await current_interaction(
        ctx, request, login_username=username if len(username) <= MAX_USERNAME else ""
    )
    if interaction is None:
        return error_page(
            ctx, "This sign-in page has expired. Go back to the application and start again.", title="Sign-in expired"
        )
    interaction = unwrap_second_factor(interaction)
    if form_error is not None:
        return login_page(ctx, interaction, 400, error=form_error.description or "The form could not be read.")
    if not csrf_ok(ctx, "login", interaction.raw_id, form.get("csrf_token")):
        return login_page(
            ctx, interaction, 403, error="The form expired or was not sent from this page. Please try again."
        )
    if not username or not password or len(username) > MAX_USERNAME or len(password) > MAX_PASSWORD:
        return login_page(
            ctx, interaction, 400, error="Enter your username and password.", username=username[:MAX_USERNAME]
        )
    limiter = ctx.limiter
    if limiter is not None:
        refusal = await limiter.before_password(username, request)
        if refusal is not None:
            await _login_event(ctx, request, interaction, events.LOGIN_LIMITED, username, refusal.limit)
            return _refused(ctx, interaction, username, refusal)
    user_id, stored_hash = interaction.login.user_id, interaction.login.password_hash
    disabled_at = interaction.login.disabled_at
    checked_by_directory = password_checker(interaction.login.source, ctx.directory is not None) == DIRECTORY
    if checked_by_directory:
        # the name as typed (no trimming): the directory decides, after the limit counted
        try:
            user = await _directory_user(ctx, form.get("username", ""), password)
        except DirectoryUnavailable as exc:
            log.warning("directory sign-in impossible: %s", exc)
            return login_page(
                ctx,
                interaction,
                503,
                error="The university directory cannot be reached right now, so university accounts cannot "
                "sign in. Please try again in a few minutes.",
                username=username,
                headers={"Retry-After": str(DIRECTORY_RETRY_AFTER)},
            )
        except Conflict:
            return login_page(
                ctx,
                interaction,
                409,
                error="This university account's username or student number is already used by another account "
                "here. Ask the university's IT service desk.",
                username=username,
            )
        ok = user is not None
        user_id, disabled_at = (user.id, user.disabled_at) if user is not None else (None, None)
    else:
        # None: the dummy hash, same time (a directory copy has no local hash: the same answer and time)
        local_hash = stored_hash if interaction.login.source != DIRECTORY else None
        ok = await ctx.passwords.verify_async(local_hash, password)
    if limiter is not None:
        refusal = await limiter.after_password(username, request, ok)
        if refusal is not None:
            return _refused(ctx, interaction, username, refusal)
    if not ok or user_id is None:
        await _login_event(ctx, request, interaction, events.LOGIN_FAILURE, username, "wrong username or password")
        return login_page(ctx, interaction, 401, error="The username or password is not correct.", username=username)
    if disabled_at is not None:  # said only to whoever knows the password
        await _login_event(ctx, request, interaction, events.LOGIN_FAILURE, username, "account disabled")
        return login_page(
            ctx,
            interaction,
            403,
            error="This account is disabled. Ask the university's IT service desk to enable it.",
            username=username,
        )
    if not checked_by_directory and ctx.passwords.needs_rehash(stored_hash):
        new_hash = await ctx.passwords.hash_async(password)
        await ctx.store.set_password_hash(user_id, new_hash)
    now = int(time.time())
    sign_in = password_sign_in(user_id, now)
    step = await second_factor_step(ctx, interaction, user_id)
    if step != mfa.NONE:  # login_success is recorded once the second factor is given
        return await begin_second_factor(ctx, request, interaction, sign_in, step)
    await _login_event(ctx, request, interaction, events.LOGIN_SUCCESS, username, "password")
    return await continue_sign_in(ctx, request, interaction, sign_in)


async def continue_sign_in(ctx: Context, request: Request, interaction: Pending, sign_in: SignIn) -> Response:
    """The sign-in is complete (password, and the second factor where one was needed): on to
    what the interaction began (the application, the device page, or a page of this server)."""
    if interaction.kind == "authorize":
        client, consent_scope = await _client_and_consent(ctx, interaction, sign_in.user_id)
        return await _complete_login(ctx, request, interaction, sign_in, client, consent_scope)
    if interaction.kind == device.KIND:
        return await device.complete_device_login(ctx, request, interaction, sign_in)
    response = see_other(_local_next(ctx, interaction.params.get("next")))
    if not await finish_interaction(ctx, interaction, response):
        return error_page(ctx, "This sign-in was already completed. Start again.", title="Sign-in expired")
    await start_session(ctx, request, response, sign_in)
    return response


async def _login_event(
    ctx: Context, request: Request, interaction: Pending, kind: str, username: str, detail: str | None
) -> None:
    """A password submission's outcome, as an event and its figure (idp/events.py, idp/metrics.py).
    A limited submission's detail names the limit; none ever holds the password."""
    if kind == events.LOGIN_LIMITED and detail is None:
        return  # the counters could not be reached (503): no sign-in was tried
    client_id = interaction.params.get("client_id")
    ip = client_ip(request, ctx.settings.trusted_proxies)
    await ctx.events.record(kind, username=username, client_id=client_id, ip=ip, detail=detail or "")


async def _directory_user(ctx: Context, typed: str, password: str):
    """The local copy of the directory person this password belongs to, created or refreshed
    from the entry (claims and role, just in time), or None when the directory says no."""
    person = await ctx.directory.authenticate(typed, password)
    if person is None:
        return None
    return await ctx.store.refresh_directory_user(person.user)


async def _client_and_consent(ctx: Context, interaction: Pending, user_id: str) -> tuple[Client | None, str | None]:
    """The authorization request's client and the user's remembered consent: as the login POST
    read them with the interaction, or read now (after the second factor)."""
    login = interaction.login
    if login is not None and login.client is not None and login.user_id == user_id:
        return login.client, login.consent_scope
    client = await ctx.store.client(interaction.params["client_id"])
    if client is None:
        return None, None
    return client, " ".join(sorted(await ctx.store.consented_scopes(user_id, client.client_id)))


# -- the second factor (docs/mfa.md) ------------------------------------------------------------
MFA_KIND = "mfa"  # the interaction of a sign-in between its password and its second factor


async def second_factor_step(ctx: Context, interaction: Pending, user_id: str) -> str:
    """What this sign-in needs after the password (protocol/mfa.py decides): the user's role and
    factors, and for an application its --require-mfa and the request's acr_values."""
    login = interaction.login
    if login is not None and login.user_id == user_id and login.role is not None:
        role, has_factor = login.role, bool(login.has_factor)  # read with the interaction
    else:
        found = await ctx.store.mfa_context(user_id)
        role, has_factor = found if found is not None else ("", False)
    app_requires = acr_mfa = False
    if interaction.kind == "authorize":
        client, _ = await _client_and_consent(ctx, interaction, user_id)
        app_requires = bool(client is not None and client.require_mfa)
        acr_mfa = bool(interaction.params.get("acr_mfa"))
    elif interaction.kind == device.KIND:
        client = await ctx.store.client(interaction.params["client_id"])
        app_requires = bool(client is not None and client.require_mfa)
    return mfa.second_factor_step(
        has_factor=has_factor,
        role=role,
        roles_required=ctx.settings.mfa_required_roles,
        app_requires=app_requires,
        acr_mfa=acr_mfa,
    )


async def begin_second_factor(
    ctx: Context, request: Request, interaction: Pending, sign_in: SignIn, step: str
) -> Response:
    """The password was right and a second factor is needed: the interaction is replaced by one
    (a new id, like a session) that holds the password sign-in and what it continues, and the
    browser goes on to the code (VERIFY) or to set up a factor first (ENROL)."""
    target = "/login/mfa" if step == mfa.VERIFY else "/account/security/totp"
    response = see_other(ctx.path(target))
    if not await ctx.store.finish_interaction(interaction.id_hash):
        return error_page(ctx, "This sign-in was already completed. Start again.", title="Sign-in expired")
    params = {"then": interaction.kind, "params": interaction.params, "step": step}
    await begin_interaction(ctx, response, new_interaction(ctx, MFA_KIND, params, sign_in))
    return response


def unwrap_second_factor(pending: Pending) -> Pending:
    """The interaction the password began, from its second-factor step (same id: finishing one
    finishes the other)."""
    if pending.kind != MFA_KIND:
        return pending
    inner = replace(pending.interaction, kind=pending.params["then"], params=pending.params["params"])
    return Pending(pending.raw_id, inner, pending.login)


def _refused(ctx: Context, interaction: Pending, username: str, refusal) -> Response:
    """The login page again, saying why the password was not checked (429 over a limit, 503 when
    the limit's counters cannot be reached) and when to retry."""
    headers = {"Retry-After": str(refusal.retry_after)}
    return login_page(ctx, interaction, refusal.status, error=refusal.message, username=username, headers=headers)


async def _complete_login(
    ctx: Context,
    request: Request,
    interaction: Pending,
    sign_in: SignIn,
    client: Client | None,
    consent_scope: str | None,
) -> Response:
    """After the password: straight back to the application with a code when the user already
    consented to these scopes (and prompt=consent was not asked), otherwise on to the consent
    page. The interaction ends, the session starts and the code's grant (or the consent step) is
    written in one go (store.complete_login); the client and the consent came with the interaction."""
    req = interaction.params
    grant = next_step = None
    if client is None or client.state != "active":
        response = error_page(ctx, "This sign-in can no longer continue. Start again from the application.")
    else:
        remembered = remembered_scopes(consent_scope)
        if not consent_needed(remembered, req["scopes"], set(req["prompts"])):
            response, grant = await code_grant(ctx, client, req, sign_in)
            clear_interaction_cookie(ctx, response)
        else:
            # The signed-in interaction gets a new id, like the session: a planted interaction
            # cookie must not carry this user's login to whoever planted it.
            response = see_other(ctx.path("/consent"))
            pending = new_interaction(ctx, "authorize", req, sign_in)
            next_step = pending.interaction
            set_interaction_cookie(ctx, response, pending.raw_id)
    session_raw, session = new_session(ctx, sign_in, request)
    finished = await ctx.store.complete_login(
        interaction.id_hash, session, previous_session_hash(ctx, request), grant=grant, next_interaction=next_step
    )
    if not finished:
        return error_page(ctx, "This sign-in was already completed. Start again from the application.")
    set_session_cookie(ctx, response, session_raw)
    return response


async def _consent_subject(ctx: Context, request: Request, interaction: Pending) -> SignIn | None:
    """Who is consenting: the user who just logged in for this interaction, else the session's."""
    if interaction.interaction.sign_in is not None:
        return interaction.interaction.sign_in
    session = await current_session(ctx, request)
    return session.sign_in if session is not None else None


async def _consent_context(ctx: Context, request: Request):
    interaction = await current_interaction(ctx, request)
    if interaction is None or interaction.kind != "authorize":
        return (
            None,
            None,
            None,
            error_page(
                ctx,
                "This consent page has expired. Go back to the application and start again.",
                title="Sign-in expired",
            ),
        )
    subject = await _consent_subject(ctx, request, interaction)
    client = await ctx.store.client(interaction.params["client_id"])
    if subject is None or client is None or client.state != "active":
        return (
            None,
            None,
            None,
            error_page(ctx, "This sign-in can no longer continue. Start again from the application."),
        )
    return interaction, subject, client, None


async def consent_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    interaction, subject, client, failure = await _consent_context(ctx, request)
    if failure is not None:
        return failure
    req = interaction.params
    if not await needs_consent(ctx, subject.user_id, client, req["scopes"], set(req["prompts"])):
        return await _complete(ctx, interaction, client, subject, "allow")
    user = await ctx.store.user(subject.user_id)
    return page(
        ctx,
        "consent.html",
        client=client,
        user=user,
        action=ctx.path("/consent"),
        scopes=[(s, scope_rules.DESCRIPTIONS.get(s, s)) for s in req["scopes"]],
        redirect_host=urlsplit(req["redirect_uri"]).netloc,
        csrf=csrf_token(ctx, "consent", interaction.raw_id),
    )


async def consent_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    interaction, subject, client, failure = await _consent_context(ctx, request)
    if failure is not None:
        return failure
    try:
        form = await read_form(request)
    except OAuthError as exc:
        return error_page(ctx, exc.description or "The form could not be read.")
    if not csrf_ok(ctx, "consent", interaction.raw_id, form.get("csrf_token")):
        return error_page(ctx, "The form expired or was not sent from this page. Please start again.", status=403)
    decision = form.get("decision")
    if decision not in ("allow", "deny"):
        return error_page(ctx, "Choose Allow or Deny.")
    if decision == "allow":
        scopes = interaction.params["scopes"]
        await ctx.store.remember_consent(subject.user_id, client.client_id, scopes, int(time.time()))
    return await _complete(ctx, interaction, client, subject, decision)


async def _complete(ctx: Context, interaction: Pending, client: Client, subject: SignIn, decision: str) -> Response:
    """End the interaction once (a second tab cannot finish it again), then answer the client."""
    req = interaction.params
    if not await ctx.store.finish_interaction(interaction.id_hash):
        return error_page(ctx, "This sign-in was already completed. Start again from the application.")
    if decision == "deny":
        out = error_redirect(ctx, req["redirect_uri"], AccessDenied("the user denied the request"), req["state"])
    else:
        out = await issue_code(ctx, client, req, subject)
    clear_interaction_cookie(ctx, out)
    return out


async def home(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    session = await current_session(ctx, request)
    user = await ctx.store.user(session.user_id) if session else None
    return page(ctx, "home.html", user=user)
