"""The one consent page (`form#consent-form`, buttons `decision=allow|deny`), for every face.

A pending sign-in at the CONSENT stage (`?interaction=` on the page, its handle in the form's
CSRF token) is shown as its continuation describes it (a `ConsentAsk`: the app, the bundles it
asks for and who receives them, a warning for an app on another device); the decision is taken
once (finishing the pending sign-in is one conditional write), remembered when allowed
(signin/consent.py: the `consent_granted` event) and handed back to the continuation.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import Response

from campusid.i18n import N_
from campusid.idp import release as bundles
from campusid.idp.context import Context
from campusid.idp.pages.login import expired
from campusid.idp.ratelimit import client_ip
from campusid.idp.signin import consent
from campusid.idp.signin import pending as stages
from campusid.idp.signin.consent import ConsentAsk
from campusid.idp.signin.pending import PendingSignIn
from campusid.idp.store.rows import SignIn
from campusid.idp.web.browser import (
    current_session,
    finish_pending,
    handle_of,
    pending_csrf,
    pending_csrf_ok,
    pending_of_form,
    pending_of_page,
    with_handle,
)
from campusid.idp.web.http import read_form
from campusid.idp.web.render import error_page, page, page_endpoint

PURPOSE = "consent"
GONE = N_("This sign-in can no longer continue. Start again from the application.")
FORGED = N_("The form expired or was not sent from this page. Please start again.")
CONSENT_EXPIRED = N_("This consent page has expired. Go back to the application and start again.")
CHOOSE = N_("Choose Allow or Deny.")


async def _subject(ctx: Context, request: Request, at: PendingSignIn) -> SignIn | None:
    """Who is consenting: who signed in for this sign-in, else this browser's session's person."""
    if at.sign_in is not None:
        return at.sign_in
    session = await current_session(ctx, request)
    return session.sign_in if session is not None else None


async def _asked(ctx: Context, request: Request, at: PendingSignIn | None):
    """(the pending sign-in, who consents, what is asked), or the answer that ends the visit."""
    if at is None or at.stage != stages.CONSENT or at.kind not in ctx.continuations:
        return expired(ctx, request, CONSENT_EXPIRED)
    subject = await _subject(ctx, request, at)
    if subject is None:
        return error_page(ctx, request, GONE, asked=at.locale)
    asked = await ctx.continuations[at.kind].consent(ctx, request, at, subject)
    if not isinstance(asked, ConsentAsk):
        return asked  # the continuation answered itself (the app is gone, nothing is left to ask)
    return at, subject, asked


async def consent_get(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    found = await _asked(ctx, request, await pending_of_page(ctx, request))
    if not isinstance(found, tuple):
        return found
    at, subject, asked = found
    user = await ctx.store.users.get(subject.user_id)
    return page(
        ctx,
        request,
        "consent.html",
        at=at,
        device=asked.device,
        app=asked.app_name,
        name=user.name if user else "",
        host=asked.recipient or "",
        scopes=[(s, bundles.DESCRIPTIONS.get(s, s)) for s in asked.bundles],
        csrf=pending_csrf(ctx, PURPOSE, at),
        action=with_handle(ctx.path("/consent"), at),
    )


@page_endpoint
async def consent_post(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    form = await read_form(request)
    token = form.get("csrf_token")
    at = await pending_of_form(ctx, request, form)
    if at is None and handle_of(token) is None:  # a form of no page of ours
        return error_page(ctx, request, FORGED, status=403)
    if at is not None and not pending_csrf_ok(ctx, PURPOSE, at, token):
        return error_page(ctx, request, FORGED, status=403, at=at)
    found = await _asked(ctx, request, at)
    if not isinstance(found, tuple):
        return found
    at, subject, asked = found
    decision = form.get("decision")
    if decision not in ("allow", "deny"):
        return error_page(ctx, request, CHOOSE, at=at)
    if not await finish_pending(ctx, at):  # once: a second tab cannot decide it again
        return expired(ctx, request)
    allow = decision == "allow"
    if allow and at.client_id is not None:
        user = await ctx.store.users.get(subject.user_id)
        await consent.remember(
            ctx.store.grants,
            ctx.events,
            user_id=subject.user_id,
            username=user.username if user else None,
            client_id=at.client_id,
            bundles=asked.bundles,
            now=int(time.time()),
            ip=client_ip(request, ctx.settings.trusted_proxies),
        )
    return await ctx.continuations[at.kind].decided(ctx, request, at, subject, allow)
