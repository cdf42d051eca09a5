"""The developer portal (DESIGN 3.2 `/developer/…`): HTML pages over AppService."""

from campusid.idp.portal.routes import routes

__all__ = ["routes"]
