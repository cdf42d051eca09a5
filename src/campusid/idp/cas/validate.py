"""The validation endpoints (Apereo CAS Protocol 3.0.3 2.4-2.6, 2.8): /validate (CAS 1.0 text),
/serviceValidate and /proxyValidate (CAS 2.0), /p3/serviceValidate and /p3/proxyValidate (CAS 3.0;
the 2.0 endpoints give the same attributes, Apereo's v3-forward-compatible view).

A pipeline of small checks, in the order of the error codes (rules/validation.py): read the
request (INVALID_REQUEST consumes nothing), the ticket's kind (INVALID_TICKET_SPEC), consume it (one
conditional statement: any attempt uses it), then the ticket's state, app and renew
(INVALID_TICKET), the service (INVALID_SERVICE), and the proxy callback when one is asked
(UNAUTHORIZED_SERVICE_PROXY, INVALID_PROXY_CALLBACK). The answer is always 200 (CAS 3.0 2.5.2),
INTERNAL_ERROR included when the store cannot be reached.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import events as ev
from campusid.idp import release
from campusid.idp.apps.service import ACTIVE
from campusid.idp.cas.proxy import grant_pgt
from campusid.idp.cas.rules import responses
from campusid.idp.cas.rules.logout_request import instant
from campusid.idp.cas.rules.tickets import PT, kind_of, ticket_hash
from campusid.idp.cas.rules.validation import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    INVALID_SERVICE,
    INVALID_TICKET,
    JSON,
    P3_PROXY_VALIDATE,
    P3_SERVICE_VALIDATE,
    PROXY_VALIDATE,
    SERVICE_VALIDATE,
    VALIDATE,
    CasFailure,
    Endpoint,
    burns,
    check_request,
    check_ticket_spec,
    read_params,
    renew_asked,
    response_format,
)
from campusid.idp.cas.services import cas
from campusid.idp.cas.slo import seal_ticket
from campusid.idp.context import Context
from campusid.idp.errors import RequestError
from campusid.idp.ratelimit import client_ip
from campusid.idp.store.errors import StoreError
from campusid.idp.store.rows import CasValidation, ConsumedTicket
from campusid.idp.web.http import NO_STORE, read_body

log = logging.getLogger("campusid.idp.cas")


async def request_params(request: Request) -> dict[str, list[str]]:
    """The query (GET), or the form body (POST, as Apereo accepts too)."""
    if request.method == "POST":
        try:
            raw = await read_body(request)
        except RequestError as exc:
            raise CasFailure(INVALID_REQUEST, exc.description) from None
        return read_params(raw)
    return read_params(request.scope.get("query_string", b""))


def answer(endpoint: Endpoint, fmt: str, success: responses.Success | None, failure: CasFailure | None) -> Response:
    """The 200 answer in the endpoint's form: CAS 1.0 text, JSON or XML."""
    if endpoint.text:
        body, media = responses.validate_text(success.user if success else None), responses.TEXT_TYPE
    elif fmt == JSON:
        media = responses.JSON_TYPE
        body = responses.success_json(success) if success else responses.failure_json(failure.code, failure.description)
    else:
        media = responses.XML_TYPE
        body = responses.success_xml(success) if success else responses.failure_xml(failure.code, failure.description)
    return Response(body.encode("utf-8"), 200, headers={**NO_STORE, "Content-Type": media})


def check_ticket(consumed: ConsumedTicket, now: int, renew: bool) -> None:
    """INVALID_TICKET (CAS 3.0 2.5.3): expired, renew not met (3.1.1: only a ticket from a new
    login), its user gone, its app no longer an active CAS app."""
    ticket, client = consumed.ticket, consumed.client
    if ticket.expires_at <= now:
        raise CasFailure(INVALID_TICKET, "the ticket has expired")
    if renew and not ticket.new_login:
        raise CasFailure(INVALID_TICKET, "renew was asked and the ticket is not from a new login")
    if consumed.person is None:
        raise CasFailure(INVALID_TICKET, "the ticket's account no longer exists")
    if client is None or client.state != ACTIVE or client.type != "cas":
        raise CasFailure(INVALID_TICKET, "the ticket's application is not active")


def check_service(consumed: ConsumedTicket, service: str) -> None:
    """INVALID_SERVICE (CAS 3.0 2.5.3): the ticket is bound to the exact service string it was
    issued for (a PT: its targetService). The ticket is used all the same."""
    if service != consumed.ticket.service:
        raise CasFailure(INVALID_SERVICE, "the ticket was not issued for this service")


def attributes(consumed: ConsumedTicket) -> dict[str, list]:
    """What the validation releases (CAS 3.0 2.5.2 and Appendix A): authenticationDate,
    isFromNewLogin, longTermAuthenticationRequestTokenUsed, then the attributes of the bundles
    its review granted, by their CAS names (idp/release.py), each only where the user has a value."""
    ticket = consumed.ticket
    out: dict[str, list] = {
        "authenticationDate": [instant(ticket.auth_time)],
        "isFromNewLogin": [bool(ticket.new_login)],
        "longTermAuthenticationRequestTokenUsed": [False],
    }
    for name, value in release.cas_attributes(consumed.person, consumed.client.granted_scopes).items():
        out[name] = [value]
    return out


async def explain_refused(ctx: Context, id_hash: str, username_hint: list) -> CasFailure:
    """The ticket could not be consumed: used before (a replay: the event `cas_ticket_replay`) or unknown."""
    found = await ctx.store.cas.find(id_hash)
    if found is not None and found.used_at is not None:
        user = await ctx.store.users.get(found.user_id)
        username_hint.append((user.username if user else None, found.client_id))
        await ctx.events.record(
            ev.CAS_TICKET_REPLAY, username=username_hint[0][0], client_id=found.client_id, detail="presented again"
        )
        return CasFailure(INVALID_TICKET, "the ticket was used already")
    return CasFailure(INVALID_TICKET, "the ticket is not recognized")


async def validate(ctx: Context, request: Request, endpoint: Endpoint, params: dict[str, str], who: list):
    """The checks after the request was read; the success (with its record and event stored)."""
    ticket, now = params["ticket"], int(time.time())
    try:
        check_ticket_spec(endpoint, ticket)
    except CasFailure:
        if burns(kind_of(ticket)):  # a PT presented at /serviceValidate is used all the same
            await ctx.store.cas.consume(ticket_hash(ticket), now)
        raise
    consumed = await ctx.store.cas.consume(ticket_hash(ticket), now)
    if consumed is None:
        raise await explain_refused(ctx, ticket_hash(ticket), who)
    who.append((consumed.person.username if consumed.person else None, consumed.ticket.client_id))
    check_ticket(consumed, now, renew_asked(params))
    check_service(consumed, params["service"])
    pgt_iou = None
    if params.get("pgtUrl") and not endpoint.text:
        pgt_iou = await grant_pgt(ctx, consumed, params["pgtUrl"], now)
    success = responses.Success(
        consumed.person.username,
        attributes(consumed),
        pgt_iou,
        tuple(consumed.ticket.proxies) if consumed.ticket.kind == PT else (),
    )
    t = consumed.ticket
    record = CasValidation(
        client_id=t.client_id,
        user_id=t.user_id,
        sid=t.sid,
        service=t.service,
        ticket_sealed=seal_ticket(cas(ctx).sealer, ticket),
        validated_at=now,
        expires_at=t.session_expires_at,
    )
    event = ctx.events.event(
        ev.CAS_TICKET_VALIDATED,
        username=success.user,
        client_id=t.client_id,
        ip=client_ip(request, ctx.settings.trusted_proxies),
        detail=f"{endpoint.name} {t.kind}" + (" from new login" if t.new_login else ""),
    )
    await ctx.store.cas.validated(record, event)
    ctx.events.counted(event)
    return success


def endpoint_handler(endpoint: Endpoint) -> Callable:
    async def handler(request: Request) -> Response:
        ctx: Context = request.app.state.ctx
        fmt, who = "XML", []
        try:
            raw = await request_params(request)
            fmt = response_format(raw)
            params = check_request(raw, ("service", "ticket"))
            success = await validate(ctx, request, endpoint, params, who)
        except CasFailure as failure:
            await _rejected(ctx, request, endpoint, failure, who)
            return answer(endpoint, fmt, None, failure)
        except StoreError as exc:  # the store cannot be reached: still 200, with the code (2.5.3)
            log.warning("CAS %s: the store cannot be reached (%s)", endpoint.name, type(exc).__name__)
            ctx.figures.cas_validation(endpoint.name, INTERNAL_ERROR)
            return answer(endpoint, fmt, None, CasFailure(INTERNAL_ERROR, "the service cannot validate tickets now"))
        ctx.figures.cas_validation(endpoint.name, "success")
        return answer(endpoint, fmt, success, None)

    handler.__name__ = f"cas_{endpoint.name.replace('/', '_')}"
    return handler


async def _rejected(ctx: Context, request: Request, endpoint: Endpoint, failure: CasFailure, who: list) -> None:
    """A refused validation's figure, and its event (`cas_ticket_rejected`, detail: the code) once a
    ticket was named well enough to be one: a request that could not be read is only counted."""
    ctx.figures.cas_validation(endpoint.name, failure.code)
    if failure.code == INVALID_REQUEST:
        return
    username, client_id = who[0] if who else (None, None)
    # the answer says what happened even when the audit trail cannot be written now
    with contextlib.suppress(StoreError):
        await ctx.events.record(
            ev.CAS_TICKET_REJECTED,
            username=username,
            client_id=client_id,
            ip=client_ip(request, ctx.settings.trusted_proxies),
            detail=f"{failure.code} at {endpoint.name}",
        )


validate_endpoint = endpoint_handler(VALIDATE)
service_validate = endpoint_handler(SERVICE_VALIDATE)
p3_service_validate = endpoint_handler(P3_SERVICE_VALIDATE)
proxy_validate = endpoint_handler(PROXY_VALIDATE)
p3_proxy_validate = endpoint_handler(P3_PROXY_VALIDATE)
