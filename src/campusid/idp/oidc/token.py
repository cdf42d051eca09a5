"""The token endpoint (RFC 6749 3.2) as a fixed pipeline of named steps.

Every request: parse strictly, `authenticate_client`, `apply_client_limit`, then the grant's
handler from GRANTS. The authorization-code grant (RFC 6749 4.1.3):

    consume_code → (refused: explain_refused_code, which revokes on replay)
                 → check_binding (redirect_uri, PKCE) → mint

the refresh-token grant (RFC 6749 6): rotate_refresh_token (a reused token revokes its
family) → narrow_scope → mint; and the device-code grant (RFC 8628 3.4, 3.5):

    check_device_grant_granted → find_device_code → check_device_code_usable
        → approved: redeem_device_code → mint
        → pending:  check_polling_pace (slow_down) → authorization_pending

Each step is one function; the rule it enforces is in its name and its docstring names the
section.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import events, release
from campusid.idp.context import Context
from campusid.idp.crypto import new_token, token_hash
from campusid.idp.errors import RequestError
from campusid.idp.oidc.errors import (
    AccessDenied,
    AuthorizationPending,
    ExpiredToken,
    InvalidGrant,
    InvalidRequest,
    InvalidScope,
    PollingTooFast,
    UnauthorizedClient,
    UnsupportedGrantType,
)
from campusid.idp.oidc.rules import device_grant as device
from campusid.idp.oidc.rules import pkce, sector
from campusid.idp.oidc.rules.client_auth import credentials, verify
from campusid.idp.oidc.rules.grant_ids import new_grant_id
from campusid.idp.oidc.services import oidc
from campusid.idp.ratelimit import client_ip
from campusid.idp.signin.authn import amr_claim
from campusid.idp.store.devices import APPROVED, DENIED, PENDING, REDEEMED
from campusid.idp.store.rows import Client, DeviceCode, Grant, RefreshToken
from campusid.idp.web.http import NO_STORE, json_error, json_response, read_form
from campusid.idp.web.observe import note_client


@dataclass
class TokenRequest:
    """A token request's form and presented credentials; `client` once they authenticated it."""

    form: dict[str, str]
    client_id: str
    secret: str | None
    client: Client | None = None
    request: Request | None = None


def _required(form: dict[str, str], name: str) -> str:
    value = form.get(name)
    if not value:
        raise InvalidRequest(f"{name} is required")
    return value


# -- steps every grant takes ------------------------------------------------------------------
async def authenticate_client(ctx: Context, req: TokenRequest) -> Client:
    """RFC 6749 2.3.1 and 3.2.1: a web client by HTTP Basic (its secret's SHA-256 digest compared
    in constant time), a public client by `client_id` alone; the client must be active. Nothing
    is consumed before this step has passed."""
    req.client = verify(await ctx.store.apps.get(req.client_id), req.secret)
    return req.client


async def apply_client_limit(ctx: Context, client: Client) -> None:
    """The per-client budget of token requests (429 with Retry-After when spent), applied before
    anything is consumed, so a refused request leaves the code or refresh token usable."""
    if ctx.limiter is not None:
        await ctx.limiter.token_request(client.client_id)


def wants_refresh_token(client: Client, scopes: list[str]) -> bool:
    """Native clients always; web clients only with offline_access (OIDC Core 11)."""
    return client.type == "native" or "offline_access" in scopes


async def mint(
    ctx: Context,
    client: Client,
    grant: Grant,
    scopes: list[str],
    now: int,
    *,
    nonce: str | None,
    refresh: str | None = None,
) -> dict:
    """The token response (RFC 6749 5.1): an RFC 9068 access token, an ID token when `openid` was
    granted (OIDC Core 3.1.3.3), and a refresh token of the grant's family when the client gets one
    (`refresh`: the successor a rotation already stored, else a new one stored now)."""
    await ctx.keys.ready()
    minter = oidc(ctx).minter
    sub = sector.subject(ctx.pairwise, client, grant.user_id)
    body = {
        "access_token": minter.access_token(
            sub=sub, client_id=client.client_id, scopes=scopes, auth_time=grant.auth_time, grant_id=grant.id, now=now
        ),
        "token_type": "Bearer",
        "expires_in": minter.access_ttl,
        "scope": " ".join(scopes),
    }
    if "openid" in scopes:
        body["id_token"] = minter.id_token(
            sub=sub,
            client_id=client.client_id,
            auth_time=grant.auth_time,
            nonce=nonce,
            now=now,
            sid=grant.sid,
            amr=amr_claim(grant.amr),
            acr=grant.acr,
        )
    if wants_refresh_token(client, scopes):
        if refresh is None:
            refresh = new_token(32)
            expires_at = now + ctx.settings.refresh_token_ttl
            await ctx.store.grants.add_refresh_token(RefreshToken(token_hash(refresh), grant.id, now, expires_at, None))
        body["refresh_token"] = refresh
    return body


async def _security_event(ctx: Context, req: TokenRequest, kind: str, grant: Grant, detail: str) -> None:
    """A replayed code or a reused refresh token, as an event and its figure (idp/events.py)."""
    user = await ctx.store.users.get(grant.user_id)
    ip = client_ip(req.request, ctx.settings.trusted_proxies) if req.request is not None else None
    await ctx.events.record(
        kind, username=user.username if user else None, client_id=grant.client_id, ip=ip, detail=detail
    )


# -- authorization_code -----------------------------------------------------------------------
async def consume_code(ctx: Context, client: Client, code: str, now: int) -> Grant | None:
    """RFC 6749 4.1.2: a code is used once. One conditional UPDATE marks it used, so of any number
    of concurrent redemptions on any number of workers exactly one gets the grant; the same
    statement binds the code to the client (RFC 6749 4.1.3): another client's code is neither
    returned nor touched."""
    return await ctx.store.grants.consume_code(token_hash(code), client.client_id, now)


async def explain_refused_code(ctx: Context, req: TokenRequest, code: str, now: int) -> InvalidGrant:
    """Why a code did not redeem. A code presented after it was used is a replay: every token
    issued from it is revoked (RFC 6749 4.1.2, RFC 9700 4.5.3), and it is a `code_replay` event."""
    known = await ctx.store.grants.by_code(token_hash(code))
    if known is not None and known.code_used_at is not None:
        await ctx.store.grants.revoke(known.id, now)
        await _security_event(ctx, req, events.CODE_REPLAY, known, "the code's grant is revoked")
        return InvalidGrant("the authorization code was already used")
    return InvalidGrant("the authorization code is invalid, expired or for another client")


async def check_binding(ctx: Context, grant: Grant, redirect_uri: str, verifier: str | None, now: int) -> None:
    """The request must repeat the authorization request's redirect_uri (RFC 6749 4.1.3) and
    prove the PKCE challenge (RFC 7636 4.6). The code is consumed already: a failed attempt by
    its own client revokes the grant, and the login must start again."""
    try:
        if redirect_uri != grant.redirect_uri:
            raise InvalidGrant("redirect_uri differs from the one in the authorization request")
        pkce.verify(verifier, grant.code_challenge)
    except InvalidGrant:
        await ctx.store.grants.revoke(grant.id, now)
        raise


async def authorization_code(ctx: Context, req: TokenRequest, client: Client) -> dict:
    """RFC 6749 4.1.3 with PKCE (RFC 7636 4.6)."""
    form = req.form
    code = _required(form, "code")
    redirect_uri = _required(form, "redirect_uri")
    now = int(time.time())
    grant = await consume_code(ctx, client, code, now)
    if grant is None:
        raise await explain_refused_code(ctx, req, code, now)
    await check_binding(ctx, grant, redirect_uri, form.get("code_verifier"), now)
    return await mint(ctx, client, grant, grant.scope.split(), now, nonce=grant.nonce)


# -- refresh_token ----------------------------------------------------------------------------
async def rotate_refresh_token(
    ctx: Context, req: TokenRequest, client: Client, presented: str, now: int, successor: str
) -> Grant:
    """RFC 6749 6 with rotation: the token is used once (one conditional UPDATE, in the
    transaction that stores `successor`) and the grant it continues must stand and be this
    client's. A token presented again after its use is a reuse: its whole family is revoked
    (RFC 9700 4.14.2), and it is a `refresh_reuse` event."""
    digest = token_hash(presented)
    grant = await ctx.store.grants.rotate_refresh(
        digest, now, token_hash(successor), now + ctx.settings.refresh_token_ttl
    )
    if grant is None:
        known = await ctx.store.grants.refresh_token(digest)
        if known is not None and known.used_at is not None:
            family = await ctx.store.grants.get(known.grant_id)
            if family is not None and family.client_id == client.client_id:
                await ctx.store.grants.revoke(family.id, now)
                await _security_event(ctx, req, events.REFRESH_REUSE, family, "the token's family is revoked")
        raise InvalidGrant("the refresh token is invalid, expired or already used")
    if grant.revoked_at is not None or grant.client_id != client.client_id:
        raise InvalidGrant("the refresh token is invalid, expired or already used")
    return grant


def narrow_scope(form: dict[str, str], granted: list[str]) -> list[str]:
    """A refresh may ask for fewer scopes, never more (RFC 6749 6)."""
    if "scope" not in form:
        return granted
    narrowed = release.parse(form["scope"])
    if not set(narrowed) <= set(granted):
        raise InvalidScope("a refresh cannot widen the granted scope")
    return narrowed


async def refresh_token(ctx: Context, req: TokenRequest, client: Client) -> dict:
    presented = _required(req.form, "refresh_token")
    now = int(time.time())
    successor = new_token(32)
    grant = await rotate_refresh_token(ctx, req, client, presented, now, successor)
    scopes = narrow_scope(req.form, grant.scope.split())
    return await mint(ctx, client, grant, scopes, now, nonce=None, refresh=successor)


# -- urn:ietf:params:oauth:grant-type:device_code ---------------------------------------------
def check_device_grant_granted(client: Client) -> None:
    """Only an app whose review granted the device grant may use it (RFC 6749 5.2
    unauthorized_client)."""
    if device.SHORT_NAME not in client.granted_grant_types:
        raise UnauthorizedClient("this application is not allowed to use the device authorization grant")


async def find_device_code(ctx: Context, client: Client, presented: str) -> DeviceCode:
    """The device code, looked up by its digest for this client only: an unknown code, or one
    issued to another client, is invalid_grant (RFC 6749 5.2, RFC 8628 3.5)."""
    code = await ctx.store.devices.of_client(token_hash(presented), client.client_id)
    if code is None:
        raise InvalidGrant("the device code is invalid or was issued to another client")
    return code


def check_device_code_usable(code: DeviceCode, now: int) -> None:
    """A redeemed code is never accepted again (invalid_grant); past its expires_in it is
    expired_token; once the person denied it, access_denied (RFC 8628 3.5)."""
    if code.status == REDEEMED:
        raise InvalidGrant("the device code was already used")
    if now >= code.expires_at:
        raise ExpiredToken("the device code has expired; start a new device authorization request")
    if code.status == DENIED:
        raise AccessDenied("the user denied the request")


async def redeem_device_code(ctx: Context, client: Client, presented: str, now: int) -> Grant:
    """RFC 8628 3.5: an approved device code yields tokens once. One conditional UPDATE … RETURNING
    marks it redeemed (and starts its grant in the same transaction), so of any number of
    concurrent polls on any number of workers exactly one gets the tokens. Like a code of the
    code flow, it yields nothing once the session it was approved in has ended (the person
    signed out, or the account was disabled)."""
    redeemed = await ctx.store.devices.redeem(token_hash(presented), client.client_id, now, new_grant_id())
    if redeemed is None:
        raise InvalidGrant("the device code was already used, or the session it was approved in has ended")
    return redeemed[1]


async def check_polling_pace(ctx: Context, code: DeviceCode, now: float) -> None:
    """RFC 8628 3.5: a device that polls before `interval` seconds have passed since its last
    poll gets slow_down, and its interval grows by 5 seconds for this and every later poll. The
    pace is kept in the device code's row, so it holds across workers. On time: still pending."""
    grown = await ctx.store.devices.poll(code.id, int(now * 1000), device.SLOW_DOWN_STEP)
    if grown is not None:
        raise PollingTooFast(f"polling too fast; wait at least {grown} seconds between requests", grown)
    raise AuthorizationPending("the user has not yet approved the request")


async def device_code(ctx: Context, req: TokenRequest, client: Client) -> dict:
    """RFC 8628 3.4: the device polls with its device code until the person has decided."""
    presented = _required(req.form, "device_code")
    check_device_grant_granted(client)
    now = ctx.clock()
    code = await find_device_code(ctx, client, presented)
    check_device_code_usable(code, int(now))
    if code.status == PENDING:
        await check_polling_pace(ctx, code, now)
    if code.status != APPROVED:  # pragma: no cover - the four statuses are handled above
        raise InvalidGrant("the device code cannot be used")
    grant = await redeem_device_code(ctx, client, presented, int(now))
    body = await mint(ctx, client, grant, grant.scope.split(), int(now), nonce=None)
    user = await ctx.store.users.get(grant.user_id)
    ip = client_ip(req.request, ctx.settings.trusted_proxies) if req.request is not None else None
    await ctx.events.record(
        events.DEVICE_CODE_REDEEMED,
        username=user.username if user else None,
        client_id=client.client_id,
        ip=ip,
        detail="tokens issued to the device",
    )
    return body


GRANTS = {
    "authorization_code": authorization_code,
    "refresh_token": refresh_token,
    device.GRANT_TYPE: device_code,
}


def _cors(request: Request, client: Client | None) -> dict:
    """CORS only for public clients: a web app's code exchange must run on its server."""
    origin = request.headers.get("origin")
    if origin and client is not None and client.type == "native":
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
    return {}


async def token(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    req = None
    try:
        form = await read_form(request)
        req = TokenRequest(form, *credentials(request.headers.get("authorization"), form), request=request)
        client = await authenticate_client(ctx, req)
        note_client(request, client.client_id)
        await apply_client_limit(ctx, client)
        handler = GRANTS.get(form.get("grant_type", ""))
        if handler is None:
            grant_type = _required(form, "grant_type")
            raise UnsupportedGrantType(f"grant_type {grant_type[:40]!r} is not supported")
        body = await handler(ctx, req, client)
        ctx.figures.token_issued(form["grant_type"])  # a key of GRANTS: the label set is bounded
    except RequestError as exc:
        return json_error(exc, _cors(request, req and req.client))
    return json_response(body, 200, {**NO_STORE, **_cors(request, req.client)})


async def token_preflight(request: Request) -> Response:
    """Preflight for public clients; Authorization is not allowed, so no browser sends Basic."""
    return Response(
        status_code=204,
        headers={
            "Access-Control-Allow-Origin": request.headers.get("origin", "*"),
            "Access-Control-Allow-Methods": "POST",
            "Access-Control-Allow-Headers": "Content-Type",
            "Access-Control-Max-Age": "600",
            "Vary": "Origin",
        },
    )
