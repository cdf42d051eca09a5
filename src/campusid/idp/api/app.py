"""The JSON management API (`/api/v1/…`): a FastAPI app mounted under the IdP, with
its OpenAPI document at /api/v1/openapi.json. Errors are `{"error", "error_description"}`."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from campusid.idp.api.auth import ApiError
from campusid.idp.api.routes import router
from campusid.idp.apps import AppError
from campusid.idp.context import Context

HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
_ERROR_CODES = {
    400: "invalid_request",
    403: "forbidden",
    404: "not_found",
    409: "invalid_transition",
    422: "validation_failed",
}


def _error(status: int, error: str, description: str) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status, headers=HEADERS)


def create_api(ctx: Context) -> FastAPI:
    api = FastAPI(
        redirect_slashes=False,  # never a redirect built from the Host header (see idp/app.py)
        title="campusid management API",
        version="1",
        description=(
            "Register client applications, take them through review, and manage users' roles. "
            "Authentication: the IdP session cookie (sign in at /login); every POST, PATCH and PUT "
            "also needs the X-CSRF-Token header from GET /me. Developers see and change only their "
            "own apps; only administrators review, and never their own app."
        ),
        openapi_url="/openapi.json",
        docs_url=None,  # Swagger UI would load third-party scripts; the JSON document is enough
        redoc_url=None,
    )
    api.state.ctx = ctx
    api.include_router(router)

    @api.exception_handler(AppError)
    async def app_error(_request: Request, exc: AppError) -> Response:
        return _error(exc.status, _ERROR_CODES.get(exc.status, "invalid_request"), exc.message)

    @api.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> Response:
        return _error(exc.status, exc.error, exc.description)

    @api.exception_handler(RequestValidationError)
    async def invalid_body(_request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(422, "validation_failed", f"{where}: {first.get('msg', 'invalid')}")

    @api.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> Response:
        return _error(exc.status_code, _ERROR_CODES.get(exc.status_code, "invalid_request"), str(exc.detail))

    @api.middleware("http")
    async def no_store(request: Request, call_next) -> Response:
        response = await call_next(request)
        response.headers.update(HEADERS)
        return response

    return api
