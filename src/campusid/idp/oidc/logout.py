"""The end_session endpoint, /logout (GET and POST): signing out here, and OpenID Connect
RP-Initiated Logout 1.0 for apps.

protocol/logout.py decides what a request asks for; this module asks the user when it must,
ends the session (the store queues the apps' back-channel logout notices in the same
transaction, and this worker's sender is woken, never awaited), and answers: a redirect to the
registered post-logout URI with `state`, the "signed out" page, or the logout page with a message
(400) for a refused request, which never redirects and ends the session only if the user then
confirms.

The confirmation form carries the verified post-logout URI and a MAC over it bound to this
browser's session, so the POST that confirms follows exactly what was verified, nothing a page
could have changed.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.requests import Request
from starlette.responses import Response

from campusid import i18n
from campusid.idp import events as ev
from campusid.idp.context import Context
from campusid.idp.crypto import b64url, equal
from campusid.idp.errors import RequestError
from campusid.idp.oidc.rules.logout import MAX_HINT, PARAMETERS, LogoutRefused, LogoutRequest, decide_logout_request
from campusid.idp.ratelimit import client_ip
from campusid.idp.web.browser import CurrentSession, csrf_ok, csrf_token, current_session, end_session
from campusid.idp.web.http import is_form, read_body, see_other
from campusid.idp.web.params import parse_urlencoded
from campusid.idp.web.render import page

_NO_SESSION = "-"  # what the confirmation's tokens bind to when this browser has no session


def _continue_mac(ctx: Context, bound_to: str, uri: str) -> str:
    mac = hmac.new(ctx.csrf_key, f"logout-continue|{bound_to}|{uri}".encode(), hashlib.sha256).digest()
    return b64url(mac)


def _logout_page(
    ctx: Context,
    request: Request,
    session: CurrentSession | None,
    *,
    ui_locales: str | None = None,
    refused: LogoutRefused | None = None,
    continue_to: str | None = None,
    client_name: str | None = None,
    user=None,
) -> Response:
    """The logout page, in the first of `ui_locales` we speak (RP-Initiated Logout 1.0 2: the
    End-User's preferred languages) or the reader's: the question (when there is a session or
    somewhere to continue to), and the refusal's message (400)."""
    bound = session.raw_id if session is not None else _NO_SESSION
    return page(
        ctx,
        request,
        "logout.html",
        status=(403 if refused.kind == "form" else 400) if refused is not None else 200,
        asked=i18n.ui_locales(ui_locales),
        after_post=ctx.path("/logout"),
        user=user,
        signed_in=session is not None,
        message=refused.text if refused is not None else None,
        action=ctx.path("/logout"),
        csrf=csrf_token(ctx, "logout", bound),
        continue_to=continue_to,
        continue_mac=_continue_mac(ctx, bound, continue_to) if continue_to else None,
        client_name=client_name,
        ui_locales=ui_locales,
    )


def _signed_out(ctx: Context, request: Request, ui_locales: str | None = None) -> Response:
    return page(ctx, request, "signed_out.html", asked=i18n.ui_locales(ui_locales))


async def _sign_out(ctx: Context, request: Request, response: Response, client_id: str | None) -> None:
    """End this browser's session; the apps are told by the queue, which this worker looks at now."""
    ended = await end_session(ctx, request, response)
    if ended is None:
        return
    user = await ctx.store.users.get(ended.user_id)
    await ctx.events.record(
        ev.LOGOUT,
        username=user.username if user else None,
        client_id=client_id,
        ip=client_ip(request, ctx.settings.trusted_proxies),
        detail=f"{len(ended.grants)} grant(s) revoked" + (" (RP-initiated)" if client_id else ""),
    )
    ctx.logout.sessions_ended(ended)


async def _user(ctx: Context, session: CurrentSession | None):
    return await ctx.store.users.get(session.user_id) if session is not None else None


async def _parameters(request: Request) -> dict[str, str]:
    """The query (GET) or form (POST) parameters, parsed strictly: UTF-8, none twice (RFC 6749 3.1);
    an ID token hint may be longer than other parameters."""
    if request.method != "POST":
        return parse_urlencoded(request.scope.get("query_string", b""), max_value=MAX_HINT)
    return parse_urlencoded(await read_body(request), max_value=MAX_HINT)


async def logout(request: Request) -> Response:
    """GET or POST /logout: a confirmation POST (it carries csrf_token), or a request, RP-initiated
    when it carries any of the RP-Initiated Logout 1.0 parameters."""
    ctx: Context = request.app.state.ctx
    session = await current_session(ctx, request)
    if request.method == "POST" and not is_form(request):  # not our form, nor an app's request
        refused = LogoutRefused("form", "the form expired or was not sent from this page")
        return _logout_page(ctx, request, session, refused=refused, user=await _user(ctx, session))
    try:
        params = await _parameters(request)
    except RequestError:  # a parameter given twice, not UTF-8, a body too large or of another type
        refused = LogoutRefused("malformed", "the request's parameters are malformed or repeated")
        return _logout_page(ctx, request, session, refused=refused, user=await _user(ctx, session))
    if request.method == "POST" and "csrf_token" in params:
        return await _confirmed(ctx, request, session, params)
    if request.method == "POST" and not any(name in params for name in PARAMETERS):
        refused = LogoutRefused("form", "the form expired or was not sent from this page")
        return _logout_page(ctx, request, session, refused=refused, user=await _user(ctx, session))
    if not any(name in params for name in PARAMETERS):
        if session is None:
            return _signed_out(ctx, request)
        return _logout_page(ctx, request, session, user=await _user(ctx, session))
    ui_locales = params.get("ui_locales")
    try:
        req = await decide_logout_request(params, ctx.keys, ctx.issuer, ctx.store.apps.get)
    except LogoutRefused as refused:
        user = await _user(ctx, session)
        return _logout_page(ctx, request, session, ui_locales=ui_locales, refused=refused, user=user)
    return await _follow(ctx, request, session, req)


async def _follow(ctx: Context, request: Request, session: CurrentSession | None, req: LogoutRequest) -> Response:
    if session is not None and not req.confirmation_needed(session.session.sid):
        response = see_other(req.redirect_uri) if req.redirect_uri else _signed_out(ctx, request, req.ui_locales)
        await _sign_out(ctx, request, response, req.client_id)
        return response
    if session is None and req.hint_sid is not None:
        # Nothing to end in this browser, and a verified ID token names the app: back to it.
        return see_other(req.redirect_uri) if req.redirect_uri else _signed_out(ctx, request, req.ui_locales)
    client = await ctx.store.apps.get(req.client_id) if req.client_id else None
    return _logout_page(
        ctx,
        request,
        session,
        ui_locales=req.ui_locales,
        continue_to=req.redirect_uri,
        client_name=client.name if client else None,
        user=await _user(ctx, session),
    )


async def _confirmed(ctx: Context, request: Request, session: CurrentSession | None, form: dict) -> Response:
    """The user said "sign out" on our page: end the session, then continue where the verified
    request pointed (only with its MAC), else show "signed out"."""
    bound = session.raw_id if session is not None else _NO_SESSION
    if not csrf_ok(ctx, "logout", bound, form.get("csrf_token")):
        refused = LogoutRefused("form", "the form expired or was not sent from this page")
        return _logout_page(ctx, request, session, refused=refused, user=await _user(ctx, session))
    target = form.get("continue_to") or None
    if target is not None and not equal(_continue_mac(ctx, bound, target), form.get("continue_mac") or ""):
        target = None
    response = see_other(target) if target else _signed_out(ctx, request, form.get("ui_locales"))
    if session is not None:
        await _sign_out(ctx, request, response, None)
    return response
