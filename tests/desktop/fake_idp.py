"""An honest, small OpenID Provider + records API for the desktop tests (real HTTP on 127.0.0.1).

It implements just what the desktop app uses, the way the real IdP does: discovery,
authorize (auto-approving, loopback redirect, PKCE S256, ``iss`` in the response), token
(authorization_code and rotating refresh_token), JWKS (RS256 ID tokens, ES256 RFC 9068 access
tokens), userinfo, revoke, and GET /records/v1/grades. Knobs let a test make it rate-limit,
refuse, or hold the records answer; ``hits`` counts requests per endpoint.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from campusid.desktop.bridge import BridgeServer, bind_loopback

CLIENT_ID = "campusid-desktop"
FULL_SCOPE = "openid profile offline_access grades.read"
GRADES = [
    {
        "course_code": "CS101",
        "course_name": "Programming I",
        "term": "2025-fall",
        "credits": 5,
        "score": 91,
        "grade_point": 4.0,
    },
    {
        "course_code": "MA102",
        "course_name": "Linear Algebra",
        "term": "2025-fall",
        "credits": 3,
        "score": 78,
        "grade_point": 3.0,
    },
    {
        "course_code": "PH110",
        "course_name": "Physics",
        "term": "2026-spring",
        "credits": 2,
        "score": 65,
        "grade_point": 2.0,
    },
]


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


_KEYS: dict[str, Any] = {}


def _keys() -> tuple[RSAKey, ECKey]:
    # One RSA key per test session: generating one costs a noticeable fraction of a second.
    if not _KEYS:
        _KEYS["rsa"] = RSAKey.generate_key(2048, parameters={"kid": "rs-1", "alg": "RS256", "use": "sig"})
        _KEYS["ec"] = ECKey.generate_key("P-256", parameters={"kid": "es-1", "alg": "ES256", "use": "sig"})
    return _KEYS["rsa"], _KEYS["ec"]


class FakeIdP:
    def __init__(self, student_name: str = "Ada Student") -> None:
        self.rsa, self.ec = _keys()
        self.student_name = student_name
        self.grades: list[dict[str, Any]] = [dict(g) for g in GRADES]
        self.hits: Counter[str] = Counter()
        self.codes: dict[str, dict[str, Any]] = {}
        self.issued: list[str] = []  # every code and token handed out (the log test looks for them)
        self.refresh_tokens: dict[str, str] = {}  # live refresh token -> scope
        self.revoked: set[str] = set()
        self.granted_scope = FULL_SCOPE
        self.access_ttl = 300
        self.authorize_error: str | None = None  # e.g. "temporarily_unavailable"
        self.token_retry_after: int | None = None  # answer the token endpoint 429 with this Retry-After
        self.records_gate: Callable[[], Awaitable[None]] | None = None
        self.issuer = ""
        self._server: BridgeServer | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeIdP:
        sock = bind_loopback("127.0.0.1", 0)
        self.issuer = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self._server = BridgeServer(self.app(), sock)
        self._server.start_in_thread()
        return self

    def request_stop(self) -> None:
        if self._server is not None:
            self._server.request_stop()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    # -- tokens ----------------------------------------------------------------------------
    def mint_access(
        self,
        scope: str | None = None,
        *,
        key: Any = None,
        alg: str = "ES256",
        iss: str | None = None,
        aud: list[str] | None = None,
        ttl: int | None = None,
    ) -> str:
        scope = self.granted_scope if scope is None else scope
        now = int(time.time())
        audience = (
            aud
            if aud is not None
            else [self.issuer] + ([self.issuer + "/records"] if "grades.read" in scope.split() else [])
        )
        claims = {
            "iss": iss or self.issuer,
            "sub": "pairwise-sub-1",
            "aud": audience,
            "client_id": CLIENT_ID,
            "scope": scope,
            "iat": now,
            "exp": now + (self.access_ttl if ttl is None else ttl),
            "jti": secrets.token_urlsafe(8),
        }
        signing_key = key or self.ec
        header = {"alg": alg, "typ": "at+jwt", "kid": signing_key.kid}
        return jwt.encode(header, claims, signing_key, algorithms=[alg])

    def _id_token(self, nonce: str | None) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": "pairwise-sub-1",
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "auth_time": now,
            "name": self.student_name,
        }
        if nonce:
            claims["nonce"] = nonce
        return jwt.encode({"alg": "RS256", "kid": "rs-1"}, claims, self.rsa, algorithms=["RS256"])

    def _token_response(self, scope: str, nonce: str | None, with_id_token: bool) -> JSONResponse:
        refresh = secrets.token_urlsafe(24)
        self.refresh_tokens[refresh] = scope
        access = self.mint_access(scope)
        self.issued += [refresh, access]
        body = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.access_ttl,
            "refresh_token": refresh,
            "scope": scope,
        }
        if with_id_token:
            body["id_token"] = self._id_token(nonce)
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    def _access_claims(self, request: Request) -> dict[str, Any] | None:
        header = request.headers.get("authorization", "")
        if not header.startswith("Bearer "):
            return None
        token = header.removeprefix("Bearer ")
        try:
            claims = jwt.decode(token, self.ec, algorithms=["ES256"]).claims
        except Exception:
            return None
        if token in self.revoked or claims.get("exp", 0) < time.time():
            return None
        return claims

    # -- endpoints -------------------------------------------------------------------------
    def app(self) -> Starlette:
        async def discovery(request: Request) -> Response:
            self.hits["discovery"] += 1
            i = self.issuer
            return JSONResponse(
                {
                    "issuer": i,
                    "authorization_endpoint": i + "/oauth/authorize",
                    "token_endpoint": i + "/oauth/token",
                    "jwks_uri": i + "/oauth/jwks",
                    "userinfo_endpoint": i + "/oauth/userinfo",
                    "revocation_endpoint": i + "/oauth/revoke",
                    "response_types_supported": ["code"],
                    "subject_types_supported": ["pairwise"],
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "code_challenge_methods_supported": ["S256"],
                    "authorization_response_iss_parameter_supported": True,
                    "token_endpoint_auth_methods_supported": ["client_secret_basic", "none"],
                }
            )

        async def jwks(request: Request) -> Response:
            self.hits["jwks"] += 1
            keys = KeySet([self.rsa, self.ec]).as_dict(private=False)
            return JSONResponse(keys, headers={"Cache-Control": "max-age=300"})

        async def authorize(request: Request) -> Response:
            self.hits["authorize"] += 1
            q = request.query_params
            redirect_uri = q.get("redirect_uri", "")
            if q.get("client_id") != CLIENT_ID or not redirect_uri.startswith("http://127.0.0.1:"):
                return Response("bad client or redirect_uri", status_code=400)
            params = {"state": q.get("state", ""), "iss": self.issuer}
            if self.authorize_error:
                params["error"] = self.authorize_error
            elif q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
                params["error"] = "invalid_request"
            else:
                code = secrets.token_urlsafe(16)
                self.codes[code] = {
                    "redirect_uri": redirect_uri,
                    "challenge": q["code_challenge"],
                    "nonce": q.get("nonce"),
                    "scope": self.granted_scope,
                }
                params["code"] = code
                self.issued.append(code)
            return RedirectResponse(redirect_uri + "?" + urlencode(params), status_code=303)

        async def token(request: Request) -> Response:
            self.hits["token"] += 1
            if self.token_retry_after is not None:
                return JSONResponse(
                    {"error": "temporarily_unavailable"},
                    status_code=429,
                    headers={"Retry-After": str(self.token_retry_after)},
                )
            form = await request.form()
            if form.get("grant_type") == "authorization_code":
                grant = self.codes.pop(str(form.get("code")), None)
                self.issued.append(str(form.get("code_verifier")))
                if (
                    grant is None
                    or grant["redirect_uri"] != form.get("redirect_uri")
                    or _s256(str(form.get("code_verifier"))) != grant["challenge"]
                ):
                    return JSONResponse({"error": "invalid_grant"}, status_code=400)
                return self._token_response(grant["scope"], grant["nonce"], with_id_token=True)
            if form.get("grant_type") == "refresh_token":
                self.hits["refresh"] += 1
                scope = self.refresh_tokens.pop(str(form.get("refresh_token")), None)
                if scope is None:
                    return JSONResponse({"error": "invalid_grant"}, status_code=400)
                return self._token_response(scope, None, with_id_token=False)
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

        async def revoke(request: Request) -> Response:
            self.hits["revoke"] += 1
            value = str((await request.form()).get("token"))
            self.revoked.add(value)
            self.refresh_tokens.pop(value, None)
            return Response(status_code=200)

        async def userinfo(request: Request) -> Response:
            if self._access_claims(request) is None:
                return Response(status_code=401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
            return JSONResponse({"sub": "pairwise-sub-1", "name": self.student_name})

        async def grades(request: Request) -> Response:
            self.hits["records"] += 1
            if self.records_gate is not None:
                await self.records_gate()
            claims = self._access_claims(request)
            if claims is None or self.issuer + "/records" not in claims.get("aud", []):
                return Response(status_code=401, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
            if "grades.read" not in str(claims.get("scope", "")).split():
                return Response(status_code=403, headers={"WWW-Authenticate": 'Bearer error="insufficient_scope"'})
            return JSONResponse({"student": {"name": self.student_name}, "grades": self.grades})

        return Starlette(
            routes=[
                Route("/.well-known/openid-configuration", discovery),
                Route("/oauth/jwks", jwks),
                Route("/oauth/authorize", authorize),
                Route("/oauth/token", token, methods=["POST"]),
                Route("/oauth/revoke", revoke, methods=["POST"]),
                Route("/oauth/userinfo", userinfo),
                Route("/records/v1/grades", grades),
            ]
        )
