"""`/healthz`, `/readyz` and `/metrics` (docs/operations.md, "Health, metrics and logs").

`/healthz` says the process serves and touches nothing else. `/readyz` asks the database, the
signing keys and Redis (when configured), each within CHECK_TIMEOUT seconds, so a hung database
makes it answer 503 quickly; a failing check's value is a short reason, never an error message
(no hosts, secrets or versions). `/metrics` is off (404) unless CAMPUSID_METRICS_TOKEN is set, and
then needs exactly `Authorization: Bearer <that token>` (RFC 6750 2.1), compared in constant time.
"""

from __future__ import annotations

import asyncio
import hmac
import logging

from starlette.requests import Request
from starlette.responses import Response

from campusid.idp import metrics
from campusid.idp.context import Context
from campusid.idp.keys import ALGS
from campusid.idp.moving_window import CountersUnavailable, RedisWindows
from campusid.idp.store.errors import StoreUnavailable
from campusid.idp.web.http import NO_STORE, json_response

log = logging.getLogger("campusid.idp")
CHECK_TIMEOUT = 2.0
OK = "ok"
NOT_CONFIGURED = "not_configured"
_BEARER = "Bearer "
_MAX_AUTHORIZATION = 512


async def healthz(request: Request) -> Response:
    return json_response({"status": "ok"}, 200, NO_STORE)


async def _timed(check, ctx: Context) -> str:
    try:
        return await asyncio.wait_for(check(ctx), CHECK_TIMEOUT)
    except TimeoutError:
        return "timeout"
    except (StoreUnavailable, CountersUnavailable):
        return "unreachable"
    except Exception:  # noqa: BLE001 - a readiness answer, never a 500; logged for the operator
        log.warning("readiness check %s failed", check.__name__, exc_info=True)
        return "error"


async def check_database(ctx: Context) -> str:
    await ctx.store.ping()
    return OK


async def check_keys(ctx: Context) -> str:
    """A key to sign with now, for each algorithm (read from the database if not yet)."""
    await ctx.keys.ready()
    try:
        for alg in ALGS:
            ctx.keys.signing_key(alg)
    except RuntimeError:
        return "no_active_key"
    return OK


async def check_redis(ctx: Context) -> str:
    windows = ctx.limiter.windows if ctx.limiter is not None else None
    if not isinstance(windows, RedisWindows):
        return NOT_CONFIGURED
    await windows.ping()
    return OK


async def readyz(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    database, keys, redis = await asyncio.gather(
        _timed(check_database, ctx), _timed(check_keys, ctx), _timed(check_redis, ctx)
    )
    checks = {"database": database, "keys": keys, "redis": redis}
    ready = all(value in (OK, NOT_CONFIGURED) for value in checks.values())
    body = {"status": "ready" if ready else "not_ready", "checks": checks}
    return json_response(body, 200 if ready else 503, NO_STORE)


def bearer_ok(authorization: str | None, token: str) -> bool:
    """Exactly one `Bearer <token>` credential (RFC 6750 2.1), equal to `token` in constant time."""
    if not authorization or len(authorization) > _MAX_AUTHORIZATION or not authorization.startswith(_BEARER):
        return False
    presented = authorization[len(_BEARER) :]
    return hmac.compare_digest(presented.encode("utf-8", "surrogateescape"), token.encode("utf-8"))


async def metrics_endpoint(request: Request) -> Response:
    ctx: Context = request.app.state.ctx
    token = ctx.settings.metrics_token
    if token is None:
        return json_response({"error": "not_found", "error_description": "metrics are not enabled"}, 404, NO_STORE)
    given = request.headers.getlist("authorization")
    if len(given) != 1 or not bearer_ok(given[0], token):
        return json_response(
            {"error": "invalid_token", "error_description": "a valid metrics bearer token is required"},
            401,
            {**NO_STORE, "WWW-Authenticate": 'Bearer realm="metrics"'},
        )
    return Response(metrics.render(), 200, media_type=metrics.CONTENT_TYPE, headers=NO_STORE)
