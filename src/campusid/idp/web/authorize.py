"""The authorization endpoint (RFC 6749 4.1.1, OIDC Core 3.1.2, RFC 9700 2.1) as a pipeline of
small checks. Until the client and its redirect_uri are verified, every error is the HTML 400
page; after that, errors go back to the redirect_uri with `state` and `iss` (RFC 9207)."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from campusid.idp.apps.service import ACTIVE
from campusid.idp.crypto import new_token, token_hash
from campusid.idp.protocol import mfa, pkce
from campusid.idp.protocol import scopes as scope_rules
from campusid.idp.protocol.errors import (
    BadAuthorizationRequest,
    ConsentRequired,
    InvalidRequest,
    InvalidScope,
    LoginRequired,
    OAuthError,
    TemporarilyUnavailable,
    UnsupportedResponseType,
)
from campusid.idp.protocol.ids import new_grant_id
from campusid.idp.protocol.params import MAX_PARAMS, decode_component
from campusid.idp.protocol.redirect_uri import matches_registered
from campusid.idp.store.rows import AuthorizeContext, Client, Grant, SignIn
from campusid.idp.web.context import Context
from campusid.idp.web.http import error_page, is_form, read_body
from campusid.idp.web.login_form import login_page
from campusid.idp.web.sessions import begin_interaction, new_interaction, session_cookie

PROMPTS = ("none", "login", "consent")


async def _raw_params(request: Request) -> dict[str, list[str]]:
    """Every parameter with all its values, so duplicates can be judged after the client is known."""
    if request.method == "POST":
        if not is_form(request):
            raise BadAuthorizationRequest("The sign-in request must be sent as a form.")
        raw = await read_body(request)
    else:
        raw = request.scope.get("query_string", b"")
    out: dict[str, list[str]] = {}
    pairs = [p for p in raw.split(b"&") if p]
    if len(pairs) > MAX_PARAMS:
        raise BadAuthorizationRequest("The sign-in request has too many parameters.")
    for pair in pairs:
        k, _, v = pair.partition(b"=")
        try:
            key, value = decode_component(k, "a parameter name"), decode_component(v, "a parameter")
        except OAuthError:
            raise BadAuthorizationRequest("The sign-in request is not valid UTF-8.") from None
        if len(value) > 4096:
            raise BadAuthorizationRequest("The sign-in request has a parameter that is too long.")
        out.setdefault(key, []).append(value)
    return out


def _single(raw: dict[str, list[str]], name: str, what: str) -> str | None:
    values = raw.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise BadAuthorizationRequest(f"The sign-in request names more than one {what}.")
    return values[0]


def requested_client_id(raw: dict[str, list[str]]) -> str:
    client_id = _single(raw, "client_id", "application")
    if not client_id:
        raise BadAuthorizationRequest("The sign-in request does not name an application (client_id).")
    return client_id


def check_client(context: AuthorizeContext | None) -> Client:
    """Unknown or inactive clients never get a redirect (RFC 6749 4.1.2.1)."""
    if context is None:
        raise BadAuthorizationRequest("The application that sent you here is not registered.")
    client = context.client
    if client.state != ACTIVE:
        raise BadAuthorizationRequest("The application that sent you here is not active, so it cannot sign you in.")
    return client


def check_redirect_uri(client: Client, raw: dict[str, list[str]]) -> str:
    """Exact match, RFC 8252 7.3 loopback port exception for native clients; a missing one is unregistered."""
    redirect_uri = _single(raw, "redirect_uri", "return address (redirect_uri)")
    if not redirect_uri or not matches_registered(redirect_uri, client.redirect_uris, client.type):
        raise BadAuthorizationRequest("The return address (redirect_uri) is not registered for this application.")
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
    requested = scope_rules.parse(params.get("scope"))
    if "openid" not in requested:
        raise InvalidScope("scope must include openid")
    allowed = set(client.granted_scopes)
    refused = [s for s in requested if s not in allowed]
    if refused:
        raise InvalidScope(f"this application may not request: {' '.join(refused)}")
    return requested


def check_prompt(params: dict[str, str]) -> set[str]:
    prompts = set(scope_rules.parse(params.get("prompt")))
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


def remembered_scopes(consent_scope: str | None) -> set[str]:
    return set(consent_scope.split()) if consent_scope else set()


def consent_needed(remembered: set[str], scopes: list[str], prompts: set[str]) -> bool:
    """Asked the first time for a set of scopes, remembered after, forced by prompt=consent
    (OIDC Core 3.1.2.4)."""
    return "consent" in prompts or not set(scopes) <= remembered


async def needs_consent(ctx: Context, user_id: str, client: Client, scopes: list[str], prompts: set[str]) -> bool:
    return consent_needed(await ctx.store.consented_scopes(user_id, client.client_id), scopes, prompts)


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
        await ctx.store.create_grant(grant)
    return response


async def authorize(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    try:
        raw = await _raw_params(request)
        client_id = requested_client_id(raw)
    except BadAuthorizationRequest as exc:
        return error_page(ctx, exc.message)
    except OAuthError as exc:  # e.g. an oversized body before the client is known
        return error_page(ctx, exc.description)
    # One round trip: the client, this browser's live session and the user's consent for it.
    session_id = session_cookie(ctx, request)
    now = int(time.time())
    context = await ctx.store.authorize_context(client_id, token_hash(session_id) if session_id else None, now)
    try:
        client = check_client(context)
        redirect_uri = check_redirect_uri(client, raw)
    except BadAuthorizationRequest as exc:
        return error_page(ctx, exc.message)
    state_values = raw.get("state") or []
    state = state_values[0] if len(state_values) == 1 else None
    try:
        params = reject_duplicates(raw)
        if not state:
            raise InvalidRequest("state is required")
        check_unsupported(params)
        check_response_type(params)
        check_response_mode(params)
        scopes = check_scope(client, params)
        challenge = pkce.check_challenge(params.get("code_challenge"), params.get("code_challenge_method"))
        nonce = check_nonce(params)
        prompts = check_prompt(params)
        max_age = check_max_age(params)
    except OAuthError as exc:
        return error_redirect(ctx, redirect_uri, exc, state)
    req = {
        "client_id": client.client_id,
        "client_name": client.name,  # shown on the login page without another lookup
        "redirect_uri": redirect_uri,
        "state": state,
        "nonce": nonce,
        "scopes": scopes,
        "code_challenge": challenge,
        "prompts": sorted(prompts),
        "max_age": max_age,
        "acr_mfa": mfa.acr_requested(params.get("acr_values")),
    }
    return await decide(ctx, context, req, now)


async def decide(ctx: Context, context: AuthorizeContext, req: dict, now: int) -> Response:
    """Interactions (OIDC Core 3.1.2.3): login when needed, consent when needed, else the code.

    `context` carries the browser's live session and the user's remembered consent, read with
    the client in one statement."""
    prompts = set(req["prompts"])
    session = context.session
    login_needed = (
        session is None
        or "login" in prompts
        or (req["max_age"] is not None and (req["max_age"] == 0 or now - session.auth_time > req["max_age"]))
        or not mfa.session_satisfies(session, app_requires=context.client.require_mfa, acr_mfa=req.get("acr_mfa"))
    )
    if login_needed:
        if "none" in prompts:
            return error_redirect(ctx, req["redirect_uri"], LoginRequired("the user is not signed in"), req["state"])
        # The login form in this response: one request less per sign-in than a redirect to /login.
        pending = new_interaction(ctx, "authorize", req)
        response = login_page(ctx, pending)
        await begin_interaction(ctx, response, pending)
        return response
    if consent_needed(remembered_scopes(context.consent_scope), req["scopes"], prompts):
        if "none" in prompts:
            return error_redirect(
                ctx, req["redirect_uri"], ConsentRequired("the user has not approved this application"), req["state"]
            )
        response = RedirectResponse(ctx.path("/consent"), status_code=303, headers={"Cache-Control": "no-store"})
        await begin_interaction(ctx, response, new_interaction(ctx, "authorize", req))
        return response
    return await issue_code(ctx, context.client, req, session)
