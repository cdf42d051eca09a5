"""The login page's handlers (GET and POST /login) and what every sign-in does once the password is
right: on to a second factor where the policy asks for one (signin/policy.py), else hand over to
the continuation of the pending sign-in's kind (signin/continuations.py). The page knows no face.

A sign-in begun here (the consoles, the account page: `/login?next=`) is the kind LOCAL: once
signed in, the browser goes back to `next` (a path on this server only). Credential POSTs answer
with 303.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from campusid.i18n import N_
from campusid.idp import events
from campusid.idp.accounts.rules import MAX_PASSWORD, MAX_USERNAME
from campusid.idp.context import Context
from campusid.idp.directory import DirectoryUnavailable
from campusid.idp.errors import RequestError
from campusid.idp.pages.login_form import PURPOSE, login_page
from campusid.idp.ratelimit import client_ip
from campusid.idp.signin import pending as stages
from campusid.idp.signin import policy
from campusid.idp.signin.authn import DIRECTORY, password_checker, password_sign_in
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.signin.policy import AppPolicy
from campusid.idp.store.errors import Conflict
from campusid.idp.store.rows import SignIn
from campusid.idp.web.browser import (
    HANDLE,
    current_session,
    find_pending,
    finish_pending,
    keep_binder,
    new_pending,
    next_stage,
    pending_csrf_ok,
    pending_of_form,
    start_session,
    with_handle,
)
from campusid.idp.web.http import query_params, read_form_or_refusal, see_other
from campusid.idp.web.render import UNREADABLE, error_page, page

DIRECTORY_RETRY_AFTER = 30
LOCAL = "local"  # a sign-in to this server itself (its consoles and account page)
EXPIRED = N_("This sign-in page has expired. Go back to the application and start again.")
FORM_EXPIRED = N_("The form expired or was not sent from this page. Please try again.")
SIGN_IN_EXPIRED = N_("Sign-in expired")
ACCOUNT_DISABLED = N_("This account is disabled. Ask the university's IT service desk to enable it.")
ALREADY_COMPLETED = N_("This sign-in was already completed. Start again.")

log = logging.getLogger("campusid.login")


def local_next(ctx: Context, value: str | None) -> str:
    """Only a path on this server may follow a login (no open redirect)."""
    if value and value.startswith("/") and not value.startswith("//") and "\\" not in value:
        parts = urlsplit(value)
        if not parts.scheme and not parts.netloc:
            return value
    return ctx.path("/")


def expired(ctx: Context, request: Request, message: str = EXPIRED, asked: str | None = None) -> Response:
    return error_page(ctx, request, message, title=SIGN_IN_EXPIRED, asked=asked)


def stage_page(ctx: Context, at: PendingSignIn) -> str:
    """Where a pending sign-in goes on from, by its stage."""
    if at.stage == stages.SECOND_FACTOR:
        enrol = at.step == stages.ENROL and not at.done
        return with_handle(ctx.path("/account/security/totp" if enrol else "/login/mfa"), at)
    if at.stage == stages.CONSENT:
        return with_handle(ctx.path("/consent"), at)
    return with_handle(ctx.path("/login"), at)


async def login_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    try:
        q = query_params(request)
    except RequestError:
        q = {}
    if HANDLE in q:  # a face's sign-in, sent here to sign in
        found = await find_pending(ctx, request, q[HANDLE])
        if found is None:
            return expired(ctx, request)
        return login_page(ctx, request, found) if found.stage == stages.LOGIN else see_other(stage_page(ctx, found))
    # A sign-in to this server: its page has an address of its own, which a reload keeps.
    begun, binder = new_pending(ctx, request, LOCAL, {"next": local_next(ctx, q.get("next"))})
    await ctx.store.sessions.create_interaction(begun.row)
    response = see_other(stage_page(ctx, begun))
    keep_binder(ctx, response, binder)
    return response


async def login_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    form, unreadable = await read_form_or_refusal(request)
    username = form.get("username", "").strip()
    password = form.get("password", "")
    token = form.get("csrf_token")
    # One statement: the pending sign-in the form names (none without this browser's binder) and
    # the user it names (no avoidable round trips); nothing is read for a form that names none.
    at = await pending_of_form(ctx, request, form, login_username=username if len(username) <= MAX_USERNAME else "")
    if at is None:
        return expired(ctx, request)
    if unreadable is not None:
        return login_page(ctx, request, at, unreadable.status, error=unreadable.message or UNREADABLE)
    if not pending_csrf_ok(ctx, PURPOSE, at, token):
        return login_page(ctx, request, at, 403, error=FORM_EXPIRED)
    if at.stage != stages.LOGIN:
        return see_other(stage_page(ctx, at))
    if not username or not password or len(username) > MAX_USERNAME or len(password) > MAX_PASSWORD:
        return login_page(
            ctx, request, at, 400, error=N_("Enter your username and password."), username=username[:MAX_USERNAME]
        )
    limiter = ctx.limiter
    if limiter is not None:
        refusal = await limiter.before_password(username, request)
        if refusal is not None:
            await _login_event(ctx, request, at, events.LOGIN_LIMITED, username, refusal.limit)
            return _refused(ctx, request, at, username, refusal)
    login = at.login
    user_id, stored_hash, disabled_at = login.user_id, login.password_hash, login.disabled_at
    checked_by_directory = password_checker(login.source, ctx.directory is not None) == DIRECTORY
    if checked_by_directory:
        # the name as typed (no trimming): the directory decides, after the limit counted
        try:
            user = await _directory_user(ctx, form.get("username", ""), password)
        except DirectoryUnavailable as exc:
            log.warning("directory sign-in impossible: %s", exc)
            return login_page(
                ctx,
                request,
                at,
                503,
                error=N_(
                    "The university directory cannot be reached right now, so university accounts cannot "
                    "sign in. Please try again in a few minutes."
                ),
                username=username,
                headers={"Retry-After": str(DIRECTORY_RETRY_AFTER)},
            )
        except Conflict:
            return login_page(
                ctx,
                request,
                at,
                409,
                error=N_(
                    "This university account's username or student number is already used by another account "
                    "here. Ask the university's IT service desk."
                ),
                username=username,
            )
        ok = user is not None
        user_id, disabled_at = (user.id, user.disabled_at) if user is not None else (None, None)
    else:
        # None: the dummy hash, same time (a directory copy has no local hash: the same answer and time)
        local_hash = stored_hash if login.source != DIRECTORY else None
        ok = await ctx.passwords.verify_async(local_hash, password)
    if limiter is not None:
        refusal = await limiter.after_password(username, request, ok)
        if refusal is not None:
            return _refused(ctx, request, at, username, refusal)
    if not ok or user_id is None:
        await _login_event(ctx, request, at, events.LOGIN_FAILURE, username, "wrong username or password")
        return login_page(
            ctx, request, at, 401, error=N_("The username or password is not correct."), username=username
        )
    if disabled_at is not None:  # said only to whoever knows the password
        await _login_event(ctx, request, at, events.LOGIN_FAILURE, username, "account disabled")
        return login_page(ctx, request, at, 403, error=ACCOUNT_DISABLED, username=username)
    if not checked_by_directory and ctx.passwords.needs_rehash(stored_hash):
        await ctx.store.users.set_password_hash(user_id, await ctx.passwords.hash_async(password))
    sign_in = password_sign_in(user_id, int(time.time()))
    step = await second_factor_step(ctx, at, user_id)
    if step != policy.NONE:  # login_success is recorded once the second factor is given
        return await begin_second_factor(ctx, request, at, sign_in, step)
    await _login_event(ctx, request, at, events.LOGIN_SUCCESS, username, "password")
    return await signed_in(ctx, request, at, sign_in)


async def signed_in(ctx: Context, request: Request, at: PendingSignIn, sign_in: SignIn) -> Response:
    """The sign-in is complete (password, and the second factor where one was needed): on to what
    the pending sign-in's face does next (its continuation)."""
    if at.kind not in ctx.continuations:
        return expired(ctx, request)
    return await ctx.continuations[at.kind].signed_in(ctx, request, at, sign_in)


async def _login_event(
    ctx: Context, request: Request, at: PendingSignIn, kind: str, username: str, detail: str | None
) -> None:
    """A password submission's outcome, as an event and its figure (idp/events.py, idp/metrics.py).
    A limited submission's detail names the limit; none ever holds the password."""
    if kind == events.LOGIN_LIMITED and detail is None:
        return  # the counters could not be reached (503): no sign-in was tried
    ip = client_ip(request, ctx.settings.trusted_proxies)
    await ctx.events.record(kind, username=username, client_id=at.client_id, ip=ip, detail=detail or "")


async def _directory_user(ctx: Context, typed: str, password: str):
    """The local copy of the directory person this password belongs to, created or refreshed
    from the entry (claims and role, just in time), or None when the directory says no."""
    person = await ctx.directory.authenticate(typed, password)
    if person is None:
        return None
    return await ctx.store.users.refresh_directory_copy(person.user)


def _refused(ctx: Context, request: Request, at: PendingSignIn, username: str, refusal) -> Response:
    """The login page again, saying why the password was not checked (429 over a limit, 503 when
    the limit's counters cannot be reached) and when to retry."""
    headers = {"Retry-After": str(refusal.retry_after)}
    return login_page(ctx, request, at, refusal.status, error=refusal.message, username=username, headers=headers)


# -- the second factor (docs/mfa.md) ------------------------------------------------------------
async def second_factor_step(ctx: Context, at: PendingSignIn, user_id: str) -> str:
    """What this sign-in needs after the password (signin/policy.py decides): the person's role
    and factors, as read with the pending sign-in, and what its app and request ask."""
    login = at.login
    if login is not None and login.user_id == user_id and login.role is not None:
        role, has_factor = login.role, bool(login.has_factor)
    else:
        found = await ctx.store.factors.mfa_context(user_id)
        role, has_factor = found if found is not None else ("", False)
    asked = await ctx.continuations[at.kind].policy(ctx, at) if at.kind in ctx.continuations else AppPolicy()
    return policy.second_factor_step(
        has_factor=has_factor, role=role, roles_required=ctx.settings.mfa_required_roles, policy=asked
    )


async def begin_second_factor(
    ctx: Context, request: Request, at: PendingSignIn, sign_in: SignIn, step: str
) -> Response:
    """The password was right and a second factor is needed: the pending sign-in moves on to that
    stage under a new handle (like a session: whoever knew the old one does not get this login),
    and the browser goes on to the code (VERIFY) or to set up a factor first (ENROL)."""
    after = next_stage(ctx, request, at, stages.SECOND_FACTOR, sign_in, step=step)
    if not await finish_pending(ctx, at):
        return expired(ctx, request, ALREADY_COMPLETED)
    await ctx.store.sessions.create_interaction(after.row)
    return see_other(stage_page(ctx, after))


# -- a sign-in to this server itself ------------------------------------------------------------
class LocalSignIn:
    """The continuation of a sign-in begun on this server: the session starts and the browser goes
    back to the page that sent it (`next`)."""

    kind = LOCAL

    async def policy(self, ctx: Context, at: PendingSignIn) -> AppPolicy:
        return policy.NO_POLICY

    async def signed_in(self, ctx: Context, request: Request, at: PendingSignIn, sign_in: SignIn) -> Response:
        response = see_other(local_next(ctx, at.request.get("next")))
        if not await finish_pending(ctx, at):
            return expired(ctx, request, ALREADY_COMPLETED)
        await start_session(ctx, request, response, sign_in)
        return response

    async def consent(self, ctx: Context, request: Request, at: PendingSignIn, subject: SignIn) -> Response:
        return expired(ctx, request)  # nothing to consent to

    async def decided(self, ctx, request, at, subject, allow) -> Response:
        return expired(ctx, request)


async def home(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    session = await current_session(ctx, request)
    user = await ctx.store.users.get(session.user_id) if session else None
    return page(ctx, request, "home.html", user=user)
