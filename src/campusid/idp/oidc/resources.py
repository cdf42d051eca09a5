"""Discovery, JWKS, userinfo, revocation (RFC 7009) and introspection (RFC 7662)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from joserfc import jwt
from joserfc.errors import JoseError
from starlette.requests import Request
from starlette.responses import Response

from campusid import i18n
from campusid.idp import release
from campusid.idp.context import Context
from campusid.idp.crypto import token_hash
from campusid.idp.keys import ACCESS_TOKEN_ALG
from campusid.idp.oidc.errors import InvalidClient, InvalidRequest, MissingToken, at_resource
from campusid.idp.oidc.rules import access_tokens, sector
from campusid.idp.oidc.rules import device_grant as device
from campusid.idp.oidc.rules.client_auth import authenticate
from campusid.idp.oidc.services import oidc
from campusid.idp.signin.authn import ACR_MFA, ACR_PASSWORD
from campusid.idp.store.rows import Client, Grant, RefreshToken
from campusid.idp.web.http import NO_STORE, json_endpoint, json_response, read_body, read_form
from campusid.idp.web.params import parse_urlencoded

CORS_ANY = {"Access-Control-Allow-Origin": "*"}
_USERINFO_HEADERS = {**NO_STORE, **CORS_ANY}


def discovery_document(ctx: Context) -> dict:
    return {
        "issuer": ctx.issuer,
        "authorization_endpoint": ctx.url("/oauth/authorize"),
        "token_endpoint": ctx.url("/oauth/token"),
        "jwks_uri": ctx.url("/oauth/jwks"),
        "userinfo_endpoint": ctx.url("/oauth/userinfo"),
        "revocation_endpoint": ctx.url("/oauth/revoke"),
        "introspection_endpoint": ctx.url("/oauth/introspect"),
        "end_session_endpoint": ctx.url("/logout"),
        # OpenID Connect Back-Channel Logout 1.0 2.1: logout tokens carry `sid`, as ID tokens do.
        "backchannel_logout_supported": True,
        "backchannel_logout_session_supported": True,
        # OpenID Connect Discovery 1.0 3: the languages of the pages (BCP 47), which ui_locales chooses.
        "ui_locales_supported": [i18n.tag_of(name) for name in i18n.locales()],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "device_authorization_endpoint": ctx.url("/oauth/device_authorization"),
        "grant_types_supported": ["authorization_code", "refresh_token", device.GRANT_TYPE],
        "subject_types_supported": ["pairwise"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic"],
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": list(release.ALL),
        "claims_supported": [
            "sub",
            "iss",
            "aud",
            "exp",
            "iat",
            "auth_time",
            "nonce",
            "sid",
            "amr",
            "acr",
            "name",
            "given_name",
            "family_name",
            "email",
            "student_number",
        ],
        "prompt_values_supported": ["none", "login", "consent"],
        "acr_values_supported": [ACR_PASSWORD, ACR_MFA],
        "authorization_response_iss_parameter_supported": True,
        "request_parameter_supported": False,
        "request_uri_parameter_supported": False,
        "claims_parameter_supported": False,
    }


def make_discovery(ctx: Context):
    body = json.dumps(discovery_document(ctx), separators=(",", ":")).encode()
    headers = {"Cache-Control": "public, max-age=3600", **CORS_ANY}

    async def discovery(request: Request) -> Response:
        return Response(body, media_type="application/json", headers=headers)

    return discovery


async def jwks(request: Request) -> Response:
    """The published keys as the database has them now: a key that `keys rotate` (in any process)
    just added is in the very next answer, well before it signs (it waits CAMPUSID_JWKS_MAX_AGE)."""
    ctx: Context = request.app.state.ctx
    await ctx.keys.reload()
    return json_response(
        ctx.keys.jwks(), headers={"Cache-Control": f"public, max-age={ctx.settings.jwks_max_age}", **CORS_ANY}
    )


@json_endpoint(headers=CORS_ANY, refine=at_resource)
async def userinfo(request: Request) -> Response:
    """OIDC Core 5.3 with RFC 6750 bearer tokens (header, or form body on POST)."""
    ctx: Context = request.app.state.ctx
    token = access_tokens.bearer_token(request.headers.get("authorization"))
    if request.method == "POST" and request.headers.get("content-type", "").startswith(
        "application/x-www-form-urlencoded"
    ):
        form = parse_urlencoded(await read_body(request))
        if "access_token" in form:
            if token is not None:
                raise InvalidRequest("send the access token once, not in two places")
            token = form["access_token"]
    if token is None:
        raise MissingToken()
    validator = oidc(ctx).validator
    claims = await validator.validate(token, ctx.issuer, scope="openid")
    subject = await validator.subject(claims)
    # what the granted scopes release, in OIDC's names (idp/release.py); `sub` as in the ID token
    out = {"sub": claims["sub"], **release.oidc_claims(subject, claims["scope"].split())}
    return json_response(out, headers=_USERINFO_HEADERS)


@dataclass(frozen=True)
class FoundRefreshToken:
    token: RefreshToken
    grant: Grant


async def _find_token(ctx: Context, token: str) -> FoundRefreshToken | dict | None:
    """One of our refresh tokens (with its grant), or the claims of one of our access tokens
    (signature and issuer checked), else None."""
    row = await ctx.store.grants.refresh_token(token_hash(token))
    if row is not None:
        grant = await ctx.store.grants.get(row.grant_id)
        return FoundRefreshToken(row, grant) if grant else None
    if token.count(".") != 2 or len(token) > 8192:
        return None
    try:
        decoded = jwt.decode(token, await ctx.keys.verification_keys(), algorithms=[ACCESS_TOKEN_ALG])
    except (JoseError, ValueError, TypeError):
        return None
    claims = decoded.claims
    if claims.get("iss") != ctx.issuer or not isinstance(claims.get("gid"), str):
        return None
    return claims


async def _client_and_token(ctx: Context, request: Request, *, confidential: bool = False) -> tuple[Client, str]:
    """The authenticated client (RFC 6749 section 2.3; a confidential one where `confidential`) and
    the `token` parameter it sends (RFC 7009 section 2.1, RFC 7662 section 2.1)."""
    form = await read_form(request)
    client = await authenticate(ctx.store.apps.get, request.headers.get("authorization"), form)
    if confidential and client.type != "web":
        raise InvalidClient("introspection needs a confidential client")
    token = form.get("token")
    if not token:
        raise InvalidRequest("token is required")
    return client, token


@json_endpoint
async def revoke(request: Request) -> Response:
    """RFC 7009: 200 for any token, ours or not; revoking either kind ends the grant behind it."""
    ctx: Context = request.app.state.ctx
    client, token = await _client_and_token(ctx, request)
    found = await _find_token(ctx, token)
    if isinstance(found, FoundRefreshToken):
        grant_id, owner = found.grant.id, found.grant.client_id
    elif found is not None:
        grant_id, owner = found["gid"], found.get("client_id")
    if found is not None and owner == client.client_id:
        await ctx.store.grants.revoke(grant_id, int(time.time()))
    return Response(status_code=200, headers=NO_STORE)


@json_endpoint
async def introspect(request: Request) -> Response:
    """RFC 7662 for confidential clients, about tokens issued to them."""
    ctx: Context = request.app.state.ctx
    client, token = await _client_and_token(ctx, request, confidential=True)
    inactive = json_response({"active": False}, headers=NO_STORE)
    found = await _find_token(ctx, token)
    if found is None:
        return inactive
    now = int(time.time())
    if isinstance(found, FoundRefreshToken):
        grant, row = found.grant, found.token
        if grant.client_id != client.client_id or grant.revoked_at or row.used_at or row.expires_at <= now:
            return inactive
        return json_response(
            {
                "active": True,
                "token_type": "refresh_token",
                "client_id": grant.client_id,
                "scope": grant.scope,
                "sub": sector.subject(ctx.pairwise, client, grant.user_id),
                "exp": row.expires_at,
                "iss": ctx.issuer,
            },
            headers=NO_STORE,
        )
    claims = found
    if claims.get("client_id") != client.client_id or claims.get("exp", 0) <= now:
        return inactive
    if await ctx.store.grants.token_subject(claims["gid"]) is None:
        return inactive
    out = {k: claims[k] for k in ("scope", "client_id", "sub", "exp", "iat", "iss", "aud", "jti") if k in claims}
    return json_response({"active": True, "token_type": "Bearer", **out}, headers=NO_STORE)
