"""The ASGI app factory every server process uses: `campusid serve` (one worker or several, under
uvicorn's supervisor) runs `uvicorn --factory campusid.idp.asgi:app_factory` with the settings in
the environment. Only these apps run the periodic housekeeping (idp/housekeeping.py)."""

from campusid.idp.app import create_app
from campusid.idp.settings import load_settings


def app_factory():
    return create_app(load_settings(), housekeeping=True)
