"""/cas/logout (Apereo CAS Protocol 3.0.3 2.3): the SSO session ends at once (no confirmation, as
Apereo's default), with single logout for every app that validated a ticket in it (the store queues
the notices in the same transaction; this worker's senders are woken, never awaited). Then: with a
`service` that matches an active CAS app, a redirect there; without one, the signed-out page (200);
with one that is refused, the signed-out page as an HTML 400 saying the browser was not sent on —
never a redirect to an address no app registered. `url` (CAS 2.0) is ignored (2.3.1)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from campusid.idp.cas.login import NO_APP, read_params
from campusid.idp.cas.rules.services import ServiceRefused, best_match, parse_service
from campusid.idp.context import Context
from campusid.idp.errors import RequestError
from campusid.idp.web.browser import end_session
from campusid.idp.web.http import error_page, page

NOT_FOLLOWED = "You are signed out. The application's address to return to was not followed: "


async def _where_to(ctx: Context, request: Request) -> tuple[str | None, str | None]:
    """(the service to go back to, None) or (None, why the one given is refused); (None, None) for none."""
    try:
        value = read_params(request).get("service")
        if value is None:
            return None, None
        service = parse_service(value)
    except ServiceRefused as exc:
        return None, f"it {exc}."
    except RequestError as exc:
        return None, f"the request cannot be read ({exc.description})."
    app = best_match(service, await ctx.store.cas.services_at(service.origin))
    return (service.given, None) if app is not None else (None, NO_APP[0].lower() + NO_APP[1:])


async def cas_logout(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    service, refusal = await _where_to(ctx, request)
    if service is not None:
        response: Response = RedirectResponse(
            service, 302, headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        )
    elif refusal is not None:
        response = error_page(ctx, NOT_FOLLOWED + refusal, 400, "Signed out")
    else:
        response = page(ctx, "signed_out.html")
    await end_session(ctx, request, response)
    return response
