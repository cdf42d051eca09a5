"""ASGI entry point for multi-worker servers: `uvicorn --factory campusid.idp.asgi:app_factory`
or `gunicorn -k uvicorn.workers.UvicornWorker 'campusid.idp.asgi:app_factory()'`."""

from campusid.idp.app import create_app
from campusid.idp.settings import load_settings


def app_factory():
    return create_app(load_settings())
