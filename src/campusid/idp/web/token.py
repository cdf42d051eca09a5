"""The token endpoint (RFC 6749 3.2, 4.1.3, 6; DESIGN 3.4): a fixed pipeline — parse strictly,
authenticate the client, rate-limit, then a registry of grant handlers."""

from __future__ import annotations

import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp.crypto import new_token, token_hash
from campusid.idp.protocol import pkce
from campusid.idp.protocol import scopes as scope_rules
from campusid.idp.protocol.client_auth import credentials, verify
from campusid.idp.protocol.errors import (
    InvalidClient,
    InvalidGrant,
    InvalidRequest,
    InvalidScope,
    OAuthError,
    UnsupportedGrantType,
)
from campusid.idp.web.context import Context
from campusid.idp.web.http import NO_STORE, json_response, oauth_error_response, read_form

BASIC_CHALLENGE = {"WWW-Authenticate": 'Basic realm="campusid", charset="UTF-8"'}


@dataclass
class TokenRequest:
    """A token request's form and presented credentials; `client` once they authenticated it."""

    form: dict[str, str]
    client_id: str
    secret: str | None
    client: dict | None = None

    def accept(self, ctx: Context, row: dict | None) -> dict:
        """The client, if `row` is the client the credentials authenticate (else InvalidClient),
        counted against its token request budget (else SlowDown)."""
        self.client = verify(row, self.secret)
        if ctx.limiter is not None:
            ctx.limiter.token_request(self.client["client_id"])
        return self.client

    async def authenticate(self, ctx: Context) -> dict:
        return self.accept(ctx, await ctx.store.hot.client(self.client_id))


def _required(form: dict[str, str], name: str) -> str:
    value = form.get(name)
    if not value:
        raise InvalidRequest(f"{name} is required")
    return value


def wants_refresh_token(client: dict, scopes: list[str]) -> bool:
    """Native clients always; web clients only with offline_access (DESIGN 3.4)."""
    return client["type"] == "native" or "offline_access" in scopes


async def mint(
    ctx: Context,
    client: dict,
    grant: dict,
    scopes: list[str],
    now: int,
    *,
    nonce: str | None,
    with_id_token: bool = True,
) -> dict:
    sub = ctx.pairwise.for_client(client, grant["user_id"])
    body = {
        "access_token": ctx.minter.access_token(
            sub=sub,
            client_id=client["client_id"],
            scopes=scopes,
            auth_time=grant["auth_time"],
            grant_id=grant["id"],
            now=now,
        ),
        "token_type": "Bearer",
        "expires_in": ctx.minter.access_ttl,
        "scope": " ".join(scopes),
    }
    if with_id_token and "openid" in scopes:
        body["id_token"] = ctx.minter.id_token(
            sub=sub, client_id=client["client_id"], auth_time=grant["auth_time"], nonce=nonce, now=now
        )
    if wants_refresh_token(client, scopes):
        refresh = new_token(32)
        await ctx.store.hot.add_refresh(
            {
                "token_hash": token_hash(refresh),
                "grant_id": grant["id"],
                "created_at": now,
                "expires_at": now + ctx.settings.refresh_token_ttl,
            }
        )
        body["refresh_token"] = refresh
    return body


def _refused_code(ctx: Context, code_hash: str, now: int) -> InvalidGrant:
    """Why a code did not redeem; a replayed code revokes its tokens (RFC 6749 4.1.2)."""
    known = ctx.store.grants.by_code(code_hash)
    if known is not None and known["code_used_at"] is not None:
        ctx.store.grants.revoke(known["id"], now)
        return InvalidGrant("the authorization code was already used")
    return InvalidGrant("the authorization code is invalid, expired or for another client")


async def authorization_code(ctx: Context, req: TokenRequest) -> dict:
    """RFC 6749 4.1.3 + RFC 7636 4.6; single use across workers; replay revokes (DESIGN 3.4).
    The client is read and the code redeemed together (hot.client_and_code, gated on the client
    authenticating), so a refused request leaves the code to its genuine client."""
    form = req.form
    if not form.get("code") or not form.get("redirect_uri"):
        await req.authenticate(ctx)  # a bad client is told so first, as for every grant
    code = _required(form, "code")
    redirect_uri = _required(form, "redirect_uri")
    now = int(time.time())
    code_hash = token_hash(code)
    digest = token_hash(req.secret) if req.secret is not None else None
    row, grant = await ctx.store.hot.client_and_code(req.client_id, digest, code_hash, now)
    try:
        client = req.accept(ctx, row)
    except OAuthError:
        if grant is not None:  # over its rate limit: the client may retry with this code
            await ctx.store.hot.return_code(grant["id"], now)
        raise
    if grant is None:
        raise await ctx.run_db(_refused_code, ctx, code_hash, now)
    try:
        if redirect_uri != grant["redirect_uri"]:
            raise InvalidGrant("redirect_uri differs from the one in the authorization request")
        pkce.verify(form.get("code_verifier"), grant["code_challenge"])
    except InvalidGrant:
        await ctx.run_db(ctx.store.grants.revoke, grant["id"], now)  # the failed attempt consumed the code
        raise
    return await mint(ctx, client, grant, grant["scope"].split(), now, nonce=grant["nonce"])


def _rotate_refresh(ctx: Context, client: dict, digest: str, now: int) -> dict:
    """Mark the refresh token used and return its grant; a reused one revokes its family."""
    row = ctx.store.grants.use_refresh(digest, now)
    if row is None:
        known = ctx.store.grants.refresh_by_hash(digest)
        if known is not None and known["used_at"] is not None:
            grant = ctx.store.grants.get(known["grant_id"])
            if grant is not None and grant["client_id"] == client["client_id"]:
                ctx.store.grants.revoke(grant["id"], now)
        raise InvalidGrant("the refresh token is invalid, expired or already used")
    grant = ctx.store.grants.get(row["grant_id"])
    if grant is None or grant["revoked_at"] is not None or grant["client_id"] != client["client_id"]:
        raise InvalidGrant("the refresh token is invalid, expired or already used")
    return grant


async def refresh_token(ctx: Context, req: TokenRequest) -> dict:
    """RFC 6749 6 with rotation; a reused refresh token revokes its whole family (RFC 9700 4.14)."""
    client = await req.authenticate(ctx)
    form = req.form
    presented = _required(form, "refresh_token")
    now = int(time.time())
    grant = await ctx.run_db(_rotate_refresh, ctx, client, token_hash(presented), now)
    scopes = grant["scope"].split()
    if "scope" in form:
        narrowed = scope_rules.parse(form["scope"])
        if not set(narrowed) <= set(scopes):
            raise InvalidScope("a refresh cannot widen the granted scope")
        scopes = narrowed
    return await mint(ctx, client, grant, scopes, now, nonce=None)


GRANTS = {"authorization_code": authorization_code, "refresh_token": refresh_token}


def _cors(request: Request, client: dict | None) -> dict:
    """CORS only for public clients: a web app's code exchange must run on its server (SPEC 1.6)."""
    origin = request.headers.get("origin")
    if origin and client is not None and client["type"] == "native":
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin"}
    return {}


async def token(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    try:
        form = await read_form(request)
    except OAuthError as exc:
        return oauth_error_response(exc)
    req = None
    try:
        req = TokenRequest(form, *credentials(request.headers.get("authorization"), form))
        handler = GRANTS.get(form.get("grant_type", ""))
        if handler is None:
            await req.authenticate(ctx)
            grant_type = _required(form, "grant_type")
            raise UnsupportedGrantType(f"grant_type {grant_type[:40]!r} is not supported")
        body = await handler(ctx, req)
    except InvalidClient as exc:
        return oauth_error_response(exc, BASIC_CHALLENGE)
    except OAuthError as exc:
        return oauth_error_response(exc, _cors(request, req and req.client))
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
