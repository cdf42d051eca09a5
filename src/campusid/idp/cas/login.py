"""/cas/login (Apereo CAS Protocol 3.0.3 2.1-2.2) and what follows a CAS sign-in (its continuation).

With a session that meets the app's policy, no page at all: a service ticket and a 302 to the
service (one SSO session with OIDC, both ways). Without one, the one login page (and the second
factor by policy); once signed in, the continuation starts the session and sends the browser on
with a ticket marked "from new login" (303 after the POST). No consent page: the app's review
decided what it receives. `renew=true` asks for the password despite a session and wins over
`gateway=true`, which otherwise sends the browser back to the service unchanged when nobody is
signed in. A service that matches no active app, or is no service URL at all, gets the HTML 400
page — never a redirect, with or without a session, gateway included. Each service ticket counts
against the login limit per user and app (CAMPUSID_LIMIT_LOGINS_PER_USER_CLIENT): over it, the
429 page with Retry-After, never a redirect without a ticket.

The pages speak the reader's language (web/language.py); `locale` (Apereo CAS's own parameter of
/cas/login, e.g. `locale=zh_CN`) asks for one, as OIDC's ui_locales does, for this sign-in's pages.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from campusid import i18n
from campusid.i18n import N_, N_plural
from campusid.idp.apps.service import ACTIVE
from campusid.idp.cas.rules import tickets
from campusid.idp.cas.rules.services import ServiceRefused, ServiceURL, best_match, matches_any, parse_service
from campusid.idp.cas.services import cas
from campusid.idp.context import Context
from campusid.idp.crypto import token_hash
from campusid.idp.errors import RequestError
from campusid.idp.pages.login_form import login_page
from campusid.idp.signin import policy
from campusid.idp.signin.consent import ConsentAsk
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.signin.policy import AppPolicy
from campusid.idp.store.rows import CasTicket, Client, SignIn
from campusid.idp.web.browser import (
    current_session,
    keep_binder,
    new_pending,
    new_session,
    previous_session_hash,
    session_cookie,
    set_session_cookie,
)
from campusid.idp.web.http import see_other
from campusid.idp.web.params import parse_urlencoded
from campusid.idp.web.render import error_page, page

KIND = "cas.login"
GONE = N_("This sign-in can no longer continue. Start again from the application.")
REFUSED_TITLE = N_("This application cannot use this sign-in service")
NO_APP = N_("The address the application sent (service) is not registered for any application here.")
_REDIRECT_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def refused(ctx: Context, request: Request, why: str, asked: str | None = None) -> Response:
    """The HTML 400 page for a service that is refused: never a redirect."""
    return error_page(ctx, request, why, 400, REFUSED_TITLE, asked=asked)


def too_many(ctx: Context, request: Request, retry_after: int, asked: str | None = None) -> Response:
    """The login limit per user and app (3.9): the 429 page and when to retry."""
    minutes = max(1, (retry_after + 59) // 60)
    response = error_page(
        ctx,
        request,
        N_plural(
            "You signed in to this application too many times in a short while. Please wait about %(count)s "
            "minute and try again.",
            "You signed in to this application too many times in a short while. Please wait about %(count)s "
            "minutes and try again.",
            minutes,
            count=minutes,
        ),
        429,
        N_("Too many sign-ins"),
        asked=asked,
    )
    response.headers["Retry-After"] = str(retry_after)
    return response


def read_params(request: Request) -> dict[str, str]:
    """The query, strictly: a parameter given twice or not UTF-8 is refused (RequestError)."""
    return parse_urlencoded(request.scope.get("query_string", b""))


def requested_service(params: dict[str, str]) -> ServiceURL | None:
    """The `service` parameter (CAS 3.0 2.1.1), or None when there is none; ServiceRefused when it
    can never be a service URL."""
    value = params.get("service")
    if value is None:
        return None
    return parse_service(value)


def asked_locale(params: dict[str, str]) -> str | None:
    """The catalogue Apereo CAS's `locale` parameter names (`zh_CN`, `zh-CN`, `en`), or None."""
    value = params.get("locale")
    return i18n.ui_locales(value.replace("_", "-")) if value else None


def flag(params: dict[str, str], name: str) -> bool:
    """`renew` and `gateway` (CAS 3.0 2.1.1): set by "true" (any letter case)."""
    return params.get(name, "").lower() == "true"


def with_ticket(service: str, ticket: str) -> str:
    """The service as given, with `ticket=` added as a query parameter (CAS 3.0 2.2.4)."""
    return f"{service}{'&' if '?' in service else '?'}ticket={ticket}"


def app_policy(client: Client | None) -> AppPolicy:
    return AppPolicy(app_requires_mfa=bool(client.require_mfa)) if client is not None else policy.NO_POLICY


async def cas_login(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    params: dict[str, str] = {}
    try:
        params = read_params(request)
        service = requested_service(params)
    except RequestError as exc:
        return refused(ctx, request, N_("The sign-in request cannot be read: %(why)s.", why=exc.message))
    except ServiceRefused as exc:
        why = N_("The address the application sent (service) %(problem)s.", problem=exc.message)
        return refused(ctx, request, why, asked_locale(params))
    renew, gateway, asked = flag(params, "renew"), flag(params, "gateway"), asked_locale(params)
    if service is None:
        return await _without_service(ctx, request, renew, asked)
    now = int(time.time())
    cookie = session_cookie(ctx, request)
    found = await ctx.store.cas.login_context(service.origin, token_hash(cookie) if cookie else None, now)
    app = best_match(service, found.services)
    if app is None:
        return refused(ctx, request, NO_APP, asked)
    session = found.session
    if not renew and session is not None and policy.session_satisfies(session.sign_in, app_policy(app)):
        response, ticket = await service_ticket(
            ctx, request, app, service.given, session.sign_in, session.expires_at, False, asked
        )
        if ticket is not None:
            await ctx.store.cas.issue(ticket)
            ctx.figures.cas_ticket_issued(tickets.ST)
        return response
    if gateway and not renew:  # CAS 3.0 2.1.1: no credentials asked; back without a ticket
        return RedirectResponse(service.given, status_code=302, headers=_REDIRECT_HEADERS)
    return await _login_form(ctx, request, {"service": service.given, "renew": renew}, app, asked)


async def _login_form(ctx: Context, request: Request, req: dict, app: Client | None, asked: str | None) -> Response:
    begun, binder = new_pending(
        ctx,
        request,
        KIND,
        req,
        client_id=app.client_id if app else None,
        client_name=app.name if app else None,
        locale=asked,
    )
    await ctx.store.sessions.create_interaction(begun.row)
    response = login_page(ctx, request, begun)
    keep_binder(ctx, response, binder)
    return response


async def _without_service(ctx: Context, request: Request, renew: bool, asked: str | None) -> Response:
    """No service (CAS 3.0 2.1.1): the "signed in" page, after the login page when needed."""
    session = None if renew else await current_session(ctx, request)
    if session is None:
        return await _login_form(ctx, request, {"service": None, "renew": renew}, None, asked)
    user = await ctx.store.users.get(session.user_id)
    return page(ctx, request, "home.html", asked=asked, user=user)


async def service_ticket(
    ctx: Context,
    request: Request,
    app: Client,
    service: str,
    sign_in: SignIn,
    session_expires_at: int,
    new_login: bool,
    asked: str | None = None,
) -> tuple[Response, CasTicket | None]:
    """The redirect to `service` with a new service ticket, and the ticket's row (the caller stores
    it); over the login limit, the 429 page (in the language `asked`) and no row."""
    limiter = ctx.limiter
    if limiter is not None:
        blocked = await limiter.completed_login(sign_in.user_id, app.client_id)
        if blocked is not None:
            return too_many(ctx, request, blocked, asked), None
    ticket, row = tickets.issue(
        tickets.ST,
        app.client_id,
        service,
        sign_in,
        session_expires_at,
        int(time.time()),
        lifetime=cas(ctx).ticket_ttl,
        new_login=new_login,
    )
    status = 302 if not new_login else 303  # 303 after the login POST (RFC 9110 15.4.4)
    return RedirectResponse(with_ticket(service, ticket), status_code=status, headers=_REDIRECT_HEADERS), row


# -- after the sign-in (signin/continuations.py) ------------------------------------------------
class CASLoginContinuation:
    """What follows a sign-in for /cas/login: the session starts, and the browser goes on to the
    service with a ticket from a new login (or to the "signed in" page when no service was given)."""

    kind = KIND

    async def policy(self, ctx: Context, at: PendingSignIn) -> AppPolicy:
        return app_policy(await _client(ctx, at))

    async def signed_in(self, ctx: Context, request: Request, at: PendingSignIn, sign_in: SignIn) -> Response:
        service = at.request.get("service")
        ticket = None
        if service is None:
            response = see_other(ctx.path("/"))
        else:
            client = await _client(ctx, at)
            if client is None or client.state != ACTIVE or not _still_registered(client, service):
                response = error_page(ctx, request, GONE, asked=at.locale)
            else:
                # the session's lifetime is that of the session written below
                expires_at = sign_in.auth_time + ctx.settings.session_ttl
                response, ticket = await service_ticket(
                    ctx, request, client, service, sign_in, expires_at, True, at.locale
                )
        session_raw, session = new_session(ctx, sign_in, request)
        if not await ctx.store.sessions.complete_login(at.id_hash, session, previous_session_hash(ctx, request)):
            done = N_("This sign-in was already completed. Start again from the application.")
            return error_page(ctx, request, done, asked=at.locale)
        if ticket is not None:
            await ctx.store.cas.issue(ticket)
            ctx.figures.cas_ticket_issued(tickets.ST)
        set_session_cookie(ctx, response, session_raw)
        return response

    async def consent(
        self, ctx: Context, request: Request, at: PendingSignIn, subject: SignIn
    ) -> ConsentAsk | Response:
        return error_page(ctx, request, GONE, asked=at.locale)  # the app's review decided its release: no consent

    async def decided(
        self, ctx: Context, request: Request, at: PendingSignIn, subject: SignIn, allow: bool
    ) -> Response:
        return error_page(ctx, request, GONE, asked=at.locale)


async def _client(ctx: Context, at: PendingSignIn) -> Client | None:
    """The app of the pending sign-in: as the login POST read it, or read now."""
    if at.client_id is None:
        return None
    login = at.login
    if login is not None and login.client is not None:
        return login.client
    return await ctx.store.apps.get(at.client_id)


def _still_registered(client: Client, service: str) -> bool:
    """The service still matches one of the app's services (its registration may have changed
    while the person signed in)."""
    try:
        return client.type == "cas" and matches_any(parse_service(service), client.services)
    except ServiceRefused:
        return False
