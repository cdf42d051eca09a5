"""The review console (`/admin/…`): HTML pages over AppService, for admins only."""

from campusid.idp.admin.routes import routes

__all__ = ["routes"]
