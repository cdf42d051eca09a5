"""The JSON management API under /api/v1 (FastAPI, OpenAPI-described)."""

from campusid.idp.api.app import create_api

__all__ = ["create_api"]
