"""The device authorization endpoint (RFC 8628 3.1, 3.2) as a pipeline of named steps:

    authenticate_client → check_device_grant_granted → apply_client_limit → check_device_scope
        → issue_device_code

Public clients name themselves with `client_id`, web clients authenticate with HTTP Basic, as at
the token endpoint. Errors are RFC 6749 5.2's: an unknown or inactive app invalid_client, one
whose review did not grant the device grant unauthorized_client, a scope the review did not
grant invalid_scope, a malformed or duplicated parameter invalid_request.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import events, release
from campusid.idp.context import Context
from campusid.idp.crypto import new_token, token_hash
from campusid.idp.oidc.errors import InvalidScope
from campusid.idp.oidc.rules import device_grant as device
from campusid.idp.oidc.rules.client_auth import credentials
from campusid.idp.oidc.services import oidc
from campusid.idp.oidc.token import (
    TokenRequest,
    apply_client_limit,
    authenticate_client,
    check_device_grant_granted,
)
from campusid.idp.ratelimit import client_ip
from campusid.idp.store import Conflict
from campusid.idp.store.devices import PENDING
from campusid.idp.store.rows import Client, DeviceCode
from campusid.idp.web.http import NO_STORE, json_endpoint, json_response, read_form

# A fresh user code that happens to equal a live one is drawn again (a unique index refuses it);
# with ~2^34 codes and a few live ones, a second draw is already rare.
_DRAWS = 5


def check_device_scope(client: Client, scope: str | None) -> list[str]:
    """RFC 8628 3.1 `scope` (optional; RFC 6749 3.3): without one the device asks for `openid`;
    with one it must include `openid` (the device gets an ID token, as in the code flow) and only
    scopes the app's review granted."""
    requested = release.parse(scope) if scope is not None else ["openid"]
    if "openid" not in requested:
        raise InvalidScope("scope must include openid")
    refused = [s for s in requested if s not in client.granted_scopes]
    if refused:
        raise InvalidScope(f"this application may not request: {' '.join(refused)[:200]}")
    return requested


async def issue_device_code(ctx: Context, client: Client, scopes: list[str]) -> tuple[str, str, DeviceCode]:
    """A new device code and user code (RFC 8628 3.2), stored as digests only."""
    now = int(ctx.clock())
    for _ in range(_DRAWS):
        device_code, user_code = new_token(32), device.new_user_code()
        row = DeviceCode(
            id=new_token(16),
            device_code_hash=token_hash(device_code),
            user_code_hash=oidc(ctx).user_codes.digest(user_code),
            client_id=client.client_id,
            scope=" ".join(scopes),
            status=PENDING,
            user_id=None,
            auth_time=None,
            sid=None,
            amr=None,
            acr=None,
            created_at=now,
            expires_at=now + ctx.settings.device_code_ttl,
            poll_interval=device.INTERVAL,
            polled_at_ms=None,
            decided_at=None,
            redeemed_at=None,
        )
        try:
            await ctx.store.devices.create(row)
        except Conflict:
            continue
        return device_code, user_code, row
    raise Conflict("no free user code after several draws")  # pragma: no cover - 2^34 codes


def device_authorization_response(ctx: Context, device_code: str, user_code: str, row: DeviceCode) -> dict:
    """RFC 8628 3.2; the user code as people type it, also in verification_uri_complete (3.3.1)."""
    shown = device.display(user_code)
    return {
        "device_code": device_code,
        "user_code": shown,
        "verification_uri": ctx.url("/device"),
        "verification_uri_complete": ctx.url(f"/device?user_code={shown}"),
        "expires_in": row.expires_at - row.created_at,
        "interval": row.poll_interval,
    }


@json_endpoint
async def device_authorization(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    form = await read_form(request)
    req = TokenRequest(form, *credentials(request.headers.get("authorization"), form), request=request)
    client = await authenticate_client(ctx, req)
    check_device_grant_granted(client)
    await apply_client_limit(ctx, client)
    scopes = check_device_scope(client, form.get("scope"))
    device_code, user_code, row = await issue_device_code(ctx, client, scopes)
    await ctx.events.record(
        events.DEVICE_CODE_ISSUED,
        client_id=client.client_id,
        ip=client_ip(request, ctx.settings.trusted_proxies),
        detail=f"scope: {row.scope}"[:200],
    )
    return json_response(device_authorization_response(ctx, device_code, user_code, row), 200, NO_STORE)
