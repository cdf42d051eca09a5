"""The authorization endpoint (RFC 6749 4.1.1, OIDC Core 3.1.2, RFC 9700 2.1) as a pipeline of
small checks. Until the client and its redirect_uri are verified, every error is the HTML 400
page; after that, errors go back to the redirect_uri with `state` and `iss` (RFC 9207)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from campusid import i18n
from campusid.i18n import N_
from campusid.idp import release
from campusid.idp.apps.service import ACTIVE
from campusid.idp.context import Context
from campusid.idp.crypto import new_token, token_hash
from campusid.idp.errors import RequestError
from campusid.idp.oidc.errors import (
    AccessDenied,
    BadAuthorizationRequest,
    ConsentRequired,
    InvalidRequest,
    InvalidScope,
    LoginRequired,
    OAuthError,
    TemporarilyUnavailable,
    UnsupportedResponseType,
)
from campusid.idp.oidc.rules import pkce
from campusid.idp.oidc.rules.grant_ids import new_grant_id
from campusid.idp.oidc.rules.redirect_uri import matches_registered
from campusid.idp.pages.login_form import login_page
from campusid.idp.signin import consent, policy
from campusid.idp.signin import pending as stages
from campusid.idp.signin.consent import ConsentAsk
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.signin.policy import AppPolicy
from campusid.idp.store.rows import AuthorizeContext, Client, Grant, SignIn
from campusid.idp.web.browser import (
    keep_binder,
    new_pending,
    new_session,
    next_stage,
    previous_session_hash,
    session_cookie,
    set_session_cookie,
    with_handle,
)
from campusid.idp.web.http import is_form, read_body, see_other
from campusid.idp.web.params import MAX_PARAMS, decode_component
from campusid.idp.web.render import error_page

PROMPTS = ("none", "login", "consent")
GONE = N_("This sign-in can no longer continue. Start again from the application.")


async def _raw_params(request: Request) -> dict[str, list[str]]:
    """Every parameter with all its values, so duplicates can be judged after the client is known."""
    if request.method == "POST":
        if not is_form(request):
            raise BadAuthorizationRequest(N_("The sign-in request must be sent as a form."))
        raw = await read_body(request)
    else:
        raw = request.scope.get("query_string", b"")
    out: dict[str, list[str]] = {}
    pairs = [p for p in raw.split(b"&") if p]
    if len(pairs) > MAX_PARAMS:
        raise BadAuthorizationRequest(N_("The sign-in request has too many parameters."))
    for pair in pairs:
        k, _, v = pair.partition(b"=")
        try:
            key, value = decode_component(k, "a parameter name"), decode_component(v, "a parameter")
        except RequestError:
            raise BadAuthorizationRequest(N_("The sign-in request is not valid UTF-8.")) from None
        if len(value) > 4096:
            raise BadAuthorizationRequest(N_("The sign-in request has a parameter that is too long."))
        out.setdefault(key, []).append(value)
    return out


def _single(raw: dict[str, list[str]], name: str, twice: str) -> str | None:
    """The parameter's one value; `twice`: what the page says when it is given more than once."""
    values = raw.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise BadAuthorizationRequest(twice)
    return values[0]


def requested_client_id(raw: dict[str, list[str]]) -> str:
    client_id = _single(raw, "client_id", N_("The sign-in request names more than one application."))
    if not client_id:
        raise BadAuthorizationRequest(N_("The sign-in request does not name an application (client_id)."))
    return client_id


def asked_locale(raw: dict[str, list[str]]) -> str | None:
    """The catalogue the request's `ui_locales` prefers (OpenID Connect Core 1.0 3.1.2.1: the
    End-User's preferred languages for the pages of this sign-in), or None; given twice, none."""
    values = raw.get("ui_locales") or []
    return i18n.ui_locales(values[0]) if len(values) == 1 else None


def check_client(context: AuthorizeContext | None) -> Client:
    """Unknown or inactive clients never get a redirect (RFC 6749 4.1.2.1)."""
    if context is None:
        raise BadAuthorizationRequest(N_("The application that sent you here is not registered."))
    client = context.client
    if client.state != ACTIVE:
        raise BadAuthorizationRequest(N_("The application that sent you here is not active, so it cannot sign you in."))
    return client


def check_redirect_uri(client: Client, raw: dict[str, list[str]]) -> str:
    """Exact match, RFC 8252 7.3 loopback port exception for native clients; a missing one is unregistered."""
    redirect_uri = _single(
        raw, "redirect_uri", N_("The sign-in request names more than one return address (redirect_uri).")
    )
    if not redirect_uri or not matches_registered(redirect_uri, client.redirect_uris, client.type):
        raise BadAuthorizationRequest(N_("The return address (redirect_uri) is not registered for this application."))
    return redirect_uri


def reject_duplicates(raw: dict[str, list[str]]) -> dict[str, str]:
    """RFC 6749 3.1: parameters MUST NOT be included more than once."""
    dupes = [k for k, v in raw.items() if len(v) > 1]
    if dupes:
        raise InvalidRequest(f"parameter {dupes[0][:40]!r} is given more than once")
    return {k: v[0] for k, v in raw.items()}


def check_response_type(params: dict[str, str]) -> None:
    if "response_type" not in params:
        raise InvalidRequest("response_type is required")
    if params["response_type"] != "code":
        raise UnsupportedResponseType("only response_type=code is supported")


def check_response_mode(params: dict[str, str]) -> None:
    if params.get("response_mode", "query") != "query":
        raise InvalidRequest("only response_mode=query is supported")


def check_scope(client: Client, params: dict[str, str]) -> list[str]:
    requested = release.parse(params.get("scope"))
    if "openid" not in requested:
        raise InvalidScope("scope must include openid")
    allowed = set(client.granted_scopes)
    refused = [s for s in requested if s not in allowed]
    if refused:
        raise InvalidScope(f"this application may not request: {' '.join(refused)}")
    return requested


def check_prompt(params: dict[str, str]) -> set[str]:
    prompts = set(release.parse(params.get("prompt")))
    if not prompts <= set(PROMPTS):
        raise InvalidRequest("prompt must be none, login or consent")
    if "none" in prompts and len(prompts) > 1:
        raise InvalidRequest("prompt=none cannot be combined with other values")
    return prompts


def check_max_age(params: dict[str, str]) -> int | None:
    value = params.get("max_age")
    if value is None:
        return None
    if not value.isdigit() or len(value) > 10:
        raise InvalidRequest("max_age must be a non-negative whole number of seconds")
    return int(value)


def check_nonce(params: dict[str, str]) -> str | None:
    nonce = params.get("nonce")
    if nonce is not None and (not nonce or len(nonce) > 512):
        raise InvalidRequest("nonce must be 1 to 512 characters")
    return nonce


def check_unsupported(params: dict[str, str]) -> None:
    for name in ("request", "request_uri"):
        if name in params:
            raise OAuthError(f"{name} is not supported", error=f"{name}_not_supported")


def error_redirect(ctx: Context, redirect_uri: str, exc: OAuthError, state: str | None) -> Response:
    """RFC 6749 4.1.2.1 with `iss` (RFC 9207)."""
    params = {"error": exc.error}
    if exc.description:
        params["error_description"] = exc.description
    if state is not None:
        params["state"] = state
    params["iss"] = ctx.issuer
    return _redirect(redirect_uri, params)


def _redirect(redirect_uri: str, params: dict[str, str]) -> Response:
    sep = "&" if "?" in redirect_uri else "?"
    return RedirectResponse(
        redirect_uri + sep + urlencode(params),
        status_code=303,
        headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
    )


async def code_grant(ctx: Context, client: Client, req: dict, sign_in: SignIn) -> tuple[Response, Grant | None]:
    """The redirect with a new single-use code and the grant row that binds it to client,
    redirect_uri, PKCE challenge, nonce, scopes and the sign-in (user, auth_time, session, how);
    the caller stores the row. Over the login frequency limit: the error redirect, and no row."""
    user_id = sign_in.user_id
    limiter = ctx.limiter
    if limiter is not None:
        blocked = await limiter.completed_login(user_id, client.client_id)
        if blocked is not None:
            error = TemporarilyUnavailable(
                "too many sign-ins to this application; try again later", retry_after=blocked
            )
            return error_redirect(ctx, req["redirect_uri"], error, req["state"]), None
    code = new_token(32)
    now = int(time.time())
    grant = Grant(
        id=new_grant_id(),
        code_hash=token_hash(code),
        client_id=client.client_id,
        user_id=user_id,
        redirect_uri=req["redirect_uri"],
        code_challenge=req["code_challenge"],
        nonce=req.get("nonce"),
        scope=" ".join(req["scopes"]),
        auth_time=sign_in.auth_time,
        created_at=now,
        code_expires_at=now + ctx.settings.code_ttl,
        code_used_at=None,
        revoked_at=None,
        sid=sign_in.sid,
        amr=sign_in.amr,
        acr=sign_in.acr,
    )
    return _redirect(req["redirect_uri"], {"code": code, "state": req["state"], "iss": ctx.issuer}), grant


async def issue_code(ctx: Context, client: Client, req: dict, sign_in: SignIn) -> Response:
    """The redirect with a code, its grant stored (see code_grant)."""
    response, grant = await code_grant(ctx, client, req, sign_in)
    if grant is not None:
        await ctx.store.grants.create(grant)
    return response


def authorization_error(
    ctx: Context,
    request: Request,
    exc: RequestError,
    verified: tuple[str, str | None] | None,
    asked: str | None = None,
) -> Response:
    """The authorization endpoint's answer to a refused request (RFC 6749 4.1.2.1): the HTML 400
    page (in the language the request asked for, `asked`) until the client and its redirect_uri are
    verified (`verified`: that redirect_uri and the request's one `state`), then a redirect there
    with the error, `state` and `iss`."""
    if verified is None or isinstance(exc, BadAuthorizationRequest):
        return error_page(ctx, request, exc.message, asked=asked)
    return error_redirect(ctx, verified[0], exc, verified[1])


async def authorize(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    verified = asked = None
    try:
        raw = await _raw_params(request)
        asked = asked_locale(raw)
        client_id = requested_client_id(raw)
        # One round trip: the client, this browser's live session and the user's consent for it.
        session_id = session_cookie(ctx, request)
        now = int(time.time())
        context = await ctx.store.grants.authorize_context(
            client_id, token_hash(session_id) if session_id else None, now
        )
        client = check_client(context)
        redirect_uri = check_redirect_uri(client, raw)
        state_values = raw.get("state") or []
        state = state_values[0] if len(state_values) == 1 else None
        verified = (redirect_uri, state)
        params = reject_duplicates(raw)
        if not state:
            raise InvalidRequest("state is required")
        check_unsupported(params)
        check_response_type(params)
        check_response_mode(params)
        req = {
            "client_id": client.client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "nonce": check_nonce(params),
            "scopes": check_scope(client, params),
            "code_challenge": pkce.check_challenge(params.get("code_challenge"), params.get("code_challenge_method")),
            "prompts": sorted(check_prompt(params)),
            "max_age": check_max_age(params),
            "acr_mfa": policy.acr_requested(params.get("acr_values")),
            "locale": asked,
        }
        return await decide(ctx, request, context, req, now)
    except RequestError as exc:
        return authorization_error(ctx, request, exc, verified, asked)


def _policy(client: Client, req: Mapping) -> AppPolicy:
    return AppPolicy(app_requires_mfa=bool(client.require_mfa), request_asks_mfa=bool(req.get("acr_mfa")))


async def decide(ctx: Context, request: Request, context: AuthorizeContext, req: dict, now: int) -> Response:
    """Interactions (OIDC Core 3.1.2.3): login when needed, consent when needed, else the code.

    `context` carries the browser's live session and the user's remembered consent, read with
    the client in one statement."""
    prompts = set(req["prompts"])
    session, client = context.session, context.client
    login_needed = (
        session is None
        or "login" in prompts
        or (req["max_age"] is not None and (req["max_age"] == 0 or now - session.auth_time > req["max_age"]))
        or not policy.session_satisfies(session, _policy(client, req))
    )
    if login_needed:
        if "none" in prompts:
            raise LoginRequired("the user is not signed in")
        # The login form in this response: one request less per sign-in than a redirect to /login.
        begun, binder = new_pending(
            ctx, request, KIND, req, client_id=client.client_id, client_name=client.name, locale=req.get("locale")
        )
        await ctx.store.sessions.create_interaction(begun.row)
        response = login_page(ctx, request, begun)
        keep_binder(ctx, response, binder)
        return response
    if consent.needed(consent.remembered(context.consent_scope), req["scopes"], "consent" in prompts):
        if "none" in prompts:
            raise ConsentRequired("the user has not approved this application")
        begun, binder = new_pending(
            ctx,
            request,
            KIND,
            req,
            stages.CONSENT,
            session,
            client_id=client.client_id,
            client_name=client.name,
            locale=req.get("locale"),
        )
        await ctx.store.sessions.create_interaction(begun.row)
        response = see_other(with_handle(ctx.path("/consent"), begun))
        keep_binder(ctx, response, binder)
        return response
    return await issue_code(ctx, client, req, session)


# -- after the sign-in (signin/continuations.py) ------------------------------------------------
KIND = "oidc.authorize"  # the pending sign-ins of authorization requests


class AuthorizeContinuation:
    """What follows a sign-in for an authorization request: straight back to the app with a code
    when the person already consented to these scopes (and prompt=consent was not asked),
    otherwise the consent page; a denial goes back with access_denied (RFC 6749 4.1.2.1)."""

    kind = KIND

    async def policy(self, ctx: Context, at: PendingSignIn) -> AppPolicy:
        login = at.login  # the login POST read the client with the pending sign-in
        client = login.client if login is not None and login.client is not None else None
        client = client or await ctx.store.apps.get(at.client_id)
        return _policy(client, at.request) if client is not None else policy.NO_POLICY

    async def signed_in(self, ctx: Context, request: Request, at: PendingSignIn, sign_in: SignIn) -> Response:
        """The pending sign-in ends, the session starts and the code's grant (or the consent step)
        is written in one go (store.complete_login); the client and the consent came with the
        pending sign-in when the login read it."""
        req = at.request
        client, consent_scope = await _client_and_consent(ctx, at, sign_in.user_id)
        grant = next_step = None
        if client is None or client.state != ACTIVE:
            response = error_page(ctx, request, GONE, asked=at.locale)
        elif not consent.needed(consent.remembered(consent_scope), req["scopes"], "consent" in req["prompts"]):
            response, grant = await code_grant(ctx, client, req, sign_in)
        else:
            # a new handle, like the session: whoever knew the login's does not get this sign-in
            next_step = next_stage(ctx, request, at, stages.CONSENT, sign_in)
            response = see_other(with_handle(ctx.path("/consent"), next_step))
        session_raw, session = new_session(ctx, sign_in, request)
        finished = await ctx.store.sessions.complete_login(
            at.id_hash,
            session,
            previous_session_hash(ctx, request),
            grant=grant,
            next_interaction=next_step.row if next_step is not None else None,
        )
        if not finished:
            return error_page(
                ctx,
                request,
                N_("This sign-in was already completed. Start again from the application."),
                asked=at.locale,
            )
        set_session_cookie(ctx, response, session_raw)
        return response

    async def consent(
        self, ctx: Context, request: Request, at: PendingSignIn, subject: SignIn
    ) -> ConsentAsk | Response:
        req = at.request
        client = await ctx.store.apps.get(at.client_id)
        if client is None or client.state != ACTIVE:
            return error_page(ctx, request, GONE, asked=at.locale)
        return ConsentAsk(client.name, tuple(req["scopes"]), recipient=urlsplit(req["redirect_uri"]).netloc)

    async def decided(
        self, ctx: Context, request: Request, at: PendingSignIn, subject: SignIn, allow: bool
    ) -> Response:
        req = at.request
        if not allow:
            return error_redirect(ctx, req["redirect_uri"], AccessDenied("the user denied the request"), req["state"])
        client = await ctx.store.apps.get(at.client_id)
        if client is None or client.state != ACTIVE:
            return error_page(ctx, request, GONE, asked=at.locale)
        return await issue_code(ctx, client, req, subject)


async def _client_and_consent(ctx: Context, at: PendingSignIn, user_id: str | None) -> tuple[Client | None, str | None]:
    """The authorization request's client and the person's remembered consent: as the login POST
    read them with the pending sign-in, or read now (after the second factor)."""
    login = at.login
    if login is not None and login.client is not None and login.user_id == user_id:
        return login.client, login.consent_scope
    client = await ctx.store.apps.get(at.client_id)
    if client is None or user_id is None:
        return client, None
    return client, " ".join(sorted(await ctx.store.grants.consented_scopes(user_id, client.client_id)))
