"""The developer portal (`/developer/…`): HTML pages over AppService."""

from campusid.idp.portal.routes import routes

__all__ = ["routes"]
