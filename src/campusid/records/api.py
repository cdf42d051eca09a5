"""GET /records/v1/grades: a resource server protected by the IdP's access tokens.

The access token must be valid (ES256 by kid, iss, exp), carry `grades.read` (checked before
the audience: 403 insufficient_scope) and the records audience (RFC 6750 3.1, RFC 9068 4). The
pairwise `sub` is resolved to the student on the server side through the grant the token
belongs to, read with the grades in one statement. The IdP is reached only through its public
interfaces: the access-token validator and the store.
"""

from __future__ import annotations

import json
from dataclasses import asdict

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp.oidc.errors import MissingToken, OAuthError, at_resource
from campusid.idp.oidc.rules import access_tokens
from campusid.idp.oidc.rules.access_tokens import AccessTokenValidator
from campusid.idp.oidc.rules.tokens import records_audience
from campusid.idp.store import Store
from campusid.records.store import GradeStore

SCOPE = "grades.read"
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def json_response(data, status: int = 200, headers: dict | None = None) -> Response:
    return Response(_encode(data).encode(), status_code=status, media_type="application/json", headers=headers)


class RecordsAPI:
    """The records resource server of one app."""

    def __init__(self, validator: AccessTokenValidator, store: Store) -> None:
        self._validator = validator
        self._audience = records_audience(validator.issuer)
        self.grades = GradeStore(store)

    async def grades_endpoint(self, request: Request) -> Response:
        try:
            token = access_tokens.bearer_token(request.headers.get("authorization"))
            if token is None:
                raise MissingToken()
            claims = await self._validator.validate(token, self._audience, SCOPE)
            transcript = await self.grades.transcript(claims["gid"])
            self._validator.check_grant(claims, transcript.client_id if transcript else None)
        except OAuthError as exc:  # RFC 6750 3: each refusal with its Bearer challenge
            refused = at_resource(exc)
            return json_response(refused.body(), refused.status, {**NO_STORE, **refused.headers})
        body = {"student": {"name": transcript.name}, "grades": [asdict(g) for g in transcript.grades]}
        return json_response(body, headers=NO_STORE)
