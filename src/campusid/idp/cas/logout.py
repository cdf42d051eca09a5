"""/cas/logout (Apereo CAS Protocol 3.0.3 2.3): the SSO session ends at once (no confirmation, as
Apereo's default), with single logout for every app that validated a ticket in it (the store queues
the notices in the same transaction; this worker's senders are woken, never awaited). Then: with a
`service` that matches an active CAS app, a redirect there; without one, the signed-out page (200);
with one that is refused, the signed-out page as an HTML 400 saying the browser was not sent on —
never a redirect to an address no app registered. `url` (CAS 2.0) is ignored (2.3.1). The pages
speak the reader's language (web/language.py), or the one Apereo's `locale` parameter names."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from campusid.i18n import N_
from campusid.idp.cas.login import asked_locale, read_params
from campusid.idp.cas.rules.services import ServiceRefused, best_match, parse_service
from campusid.idp.context import Context
from campusid.idp.errors import RequestError
from campusid.idp.web.browser import end_session
from campusid.idp.web.render import error_page, page

SIGNED_OUT = N_("Signed out")
NOT_REGISTERED = N_(
    "You are signed out. The application's address to return to was not followed: it is not registered "
    "for any application here."
)


async def _where_to(ctx: Context, params: dict[str, str]) -> tuple[str | None, str | None]:
    """(the service to go back to, None) or (None, why the one given is refused); (None, None) for none."""
    value = params.get("service")
    if value is None:
        return None, None
    try:
        service = parse_service(value)
    except ServiceRefused as exc:
        return None, N_(
            "You are signed out. The application's address to return to was not followed: it %(problem)s.",
            problem=exc.message,
        )
    app = best_match(service, await ctx.store.cas.services_at(service.origin))
    return (service.given, None) if app is not None else (None, NOT_REGISTERED)


async def cas_logout(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    try:
        params = read_params(request)
        service, refusal = await _where_to(ctx, params)
    except RequestError as exc:
        params, service = {}, None
        refusal = N_(
            "You are signed out. The application's address to return to was not followed: the request cannot be "
            "read (%(why)s).",
            why=exc.message,
        )
    asked = asked_locale(params)
    if service is not None:
        response: Response = RedirectResponse(
            service, 302, headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        )
    elif refusal is not None:
        response = error_page(ctx, request, refusal, 400, SIGNED_OUT, asked=asked)
    else:
        response = page(ctx, request, "signed_out.html", asked=asked)
    await end_session(ctx, request, response)
    return response
