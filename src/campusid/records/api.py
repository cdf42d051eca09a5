"""GET /records/v1/grades (DESIGN 3.7).

The access token must be valid (ES256 by kid, iss, exp), carry `grades.read` (checked before
the audience: 403 insufficient_scope) and the records audience. The pairwise `sub` is resolved
to the student on the server side through the grant the token belongs to.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp.protocol import access_tokens
from campusid.idp.protocol.errors import OAuthError
from campusid.idp.protocol.tokens import records_audience
from campusid.idp.web.context import Context
from campusid.idp.web.http import NO_STORE, json_response
from campusid.idp.web.resources import bearer_challenge, resolve_grant

SCOPE = "grades.read"


async def grades(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    try:
        token = access_tokens.bearer_token(request.headers.get("authorization"))
        if token is None:
            return json_response(
                {"error": "invalid_token", "error_description": "no access token"},
                401,
                {**NO_STORE, **bearer_challenge()},
            )
        claims = access_tokens.validate(token, ctx.keys, ctx.issuer, records_audience(ctx.issuer), SCOPE)
        grant = await resolve_grant(ctx, claims)
    except OAuthError as exc:
        return json_response(exc.body(), exc.status, {**NO_STORE, **bearer_challenge(exc)})
    number = grant["student_number"]
    rows = await ctx.run_db(ctx.store.grades.for_student, number) if number else []
    return json_response({"student": {"name": grant["name"]}, "grades": rows}, headers=NO_STORE)
