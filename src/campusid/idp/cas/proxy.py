"""Proxy granting (Apereo CAS Protocol 3.0.3 2.5.4, 2.7, 3.3-3.4): a validation with `pgtUrl` grants
a proxy-granting ticket through the callback, and /cas/proxy trades a PGT for a proxy ticket.

campusid asks more of a callback than the protocol does (docs/cas.md): the validating app's review
granted `cas_proxy` (else UNAUTHORIZED_SERVICE_PROXY); the pgtUrl is `https` (even on loopback),
matches one of the app's registered services by the service rule, and its server is trusted by
PKIX (the system's CAs plus CAMPUSID_CAS_PROXY_CA_FILE). Before answering, campusid GETs the pgtUrl
with `pgtIou` and `pgtId` added (its own query kept), 5 s in all, following no redirect; anything
but a 200 fails the validation with INVALID_PROXY_CALLBACK and leaves no PGT. A PGT lives as long
as the SSO session it came from, and ends with it.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import events as ev
from campusid.idp.cas.rules import responses, tickets
from campusid.idp.cas.rules.services import ServiceRefused, best_match, matches_any, parse_service
from campusid.idp.cas.rules.validation import (
    INTERNAL_ERROR,
    INVALID_PROXY_CALLBACK,
    INVALID_REQUEST,
    INVALID_TICKET,
    JSON,
    UNAUTHORIZED_SERVICE,
    UNAUTHORIZED_SERVICE_PROXY,
    CasFailure,
    check_request,
    read_params,
    response_format,
)
from campusid.idp.cas.services import cas
from campusid.idp.context import Context
from campusid.idp.store.errors import StoreError
from campusid.idp.store.rows import ConsumedTicket
from campusid.idp.web.http import NO_STORE

log = logging.getLogger("campusid.idp.cas")
PROXY_GRANT = "cas_proxy"


def check_proxy_granted(consumed: ConsumedTicket) -> None:
    """UNAUTHORIZED_SERVICE_PROXY: only an app whose review granted `cas_proxy` gets PGTs."""
    if PROXY_GRANT not in consumed.client.granted_grant_types:
        raise CasFailure(UNAUTHORIZED_SERVICE_PROXY, "this application may not proxy")


def check_callback_url(consumed: ConsumedTicket, pgt_url: str):
    """INVALID_PROXY_CALLBACK unless the pgtUrl is https and matches one of the app's services."""
    try:
        url = parse_service(pgt_url)
    except ServiceRefused as exc:
        raise CasFailure(INVALID_PROXY_CALLBACK, f"the pgtUrl {exc}") from None
    if url.scheme != "https":
        raise CasFailure(INVALID_PROXY_CALLBACK, "the pgtUrl must be https")
    if not matches_any(url, consumed.client.services):
        raise CasFailure(INVALID_PROXY_CALLBACK, "the pgtUrl is not one of the application's services")
    return url


def callback_url(pgt_url: str, pgt_iou: str, pgt: str) -> str:
    """The pgtUrl with pgtIou and pgtId added to its own query (CAS 3.0 2.5.4)."""
    extra = urlencode({"pgtIou": pgt_iou, "pgtId": pgt})
    return f"{pgt_url}{'&' if '?' in pgt_url else '?'}{extra}"


async def call_back(ctx: Context, pgt_url: str, pgt_iou: str, pgt: str) -> str | None:
    """GET the callback; None on a 200, else what went wrong (never the tickets)."""
    import httpx

    try:
        response = await cas(ctx).callbacks().get(callback_url(pgt_url, pgt_iou, pgt))
    except httpx.TimeoutException:
        return "timed out"
    except httpx.HTTPError as exc:
        return f"not reachable ({type(exc).__name__})"
    return None if response.status_code == 200 else f"HTTP {response.status_code}"


async def grant_pgt(ctx: Context, consumed: ConsumedTicket, pgt_url: str, now: int) -> str:
    """A PGT for the validated ticket's session, through the callback; its PGTIOU."""
    check_proxy_granted(consumed)
    check_callback_url(consumed, pgt_url)
    t = consumed.ticket
    pgt, row = tickets.issue(
        tickets.PGT, t.client_id, pgt_url, t, t.session_expires_at, now, lifetime=None, proxies=(pgt_url, *t.proxies)
    )
    iou = tickets.new_ticket(tickets.PGTIOU)
    # Stored first: the app may use its PGT as soon as the callback hands it over.
    await ctx.store.cas.issue(row)
    problem = await call_back(ctx, pgt_url, iou, pgt)
    if problem is not None:
        await ctx.store.cas.forget(row.id_hash)
        raise CasFailure(INVALID_PROXY_CALLBACK, f"the proxy callback failed: {problem}")
    ctx.figures.cas_ticket_issued(tickets.PGT)
    username = consumed.person.username if consumed.person else None
    await ctx.events.record(ev.CAS_PROXY_GRANTED, username=username, client_id=t.client_id, detail="PGT granted")
    return iou


def _answer(fmt: str, ticket: str | None, failure: CasFailure | None) -> Response:
    if fmt == JSON:
        media = responses.JSON_TYPE
        body = (
            responses.proxy_success_json(ticket)
            if ticket
            else responses.failure_json(failure.code, failure.description, "proxyFailure")
        )
    else:
        media = responses.XML_TYPE
        body = (
            responses.proxy_success_xml(ticket)
            if ticket
            else responses.failure_xml(failure.code, failure.description, "proxyFailure")
        )
    return Response(body.encode("utf-8"), 200, headers={**NO_STORE, "Content-Type": media})


async def proxy_ticket(ctx: Context, params: dict[str, str]) -> str:
    """/cas/proxy's checks: a live PGT (INVALID_TICKET), a targetService of an active CAS app
    (UNAUTHORIZED_SERVICE); the new PT, bound to that app and the targetService as given."""
    now = int(time.time())
    pgt = params["pgt"]
    found = await ctx.store.cas.live_pgt(tickets.ticket_hash(pgt), now) if tickets.kind_of(pgt) == tickets.PGT else None
    if found is None:
        raise CasFailure(INVALID_TICKET, "the proxy-granting ticket is not recognized or has ended")
    try:
        target = parse_service(params["targetService"])
    except ServiceRefused as exc:
        raise CasFailure(UNAUTHORIZED_SERVICE, f"the targetService {exc}") from None
    app = best_match(target, await ctx.store.cas.services_at(target.origin))
    if app is None:
        raise CasFailure(UNAUTHORIZED_SERVICE, "the targetService is not registered for any application")
    ticket, row = tickets.issue(
        tickets.PT,
        app.client_id,
        target.given,
        found,
        found.session_expires_at,
        now,
        lifetime=cas(ctx).ticket_ttl,
        proxies=tuple(found.proxies),
    )
    await ctx.store.cas.issue(row)
    ctx.figures.cas_ticket_issued(tickets.PT)
    return ticket


async def proxy(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    fmt = "XML"
    try:
        raw = read_params(request.scope.get("query_string", b""))
        fmt = response_format(raw)
        params = check_request(raw, ("pgt", "targetService"))
        return _answer(fmt, await proxy_ticket(ctx, params), None)
    except CasFailure as failure:
        if failure.code != INVALID_REQUEST:
            log.info("CAS proxy refused: %s", failure.code)
        return _answer(fmt, None, failure)
    except StoreError as exc:
        log.warning("CAS proxy: the store cannot be reached (%s)", type(exc).__name__)
        return _answer(fmt, None, CasFailure(INTERNAL_ERROR, "the service cannot issue proxy tickets now"))
