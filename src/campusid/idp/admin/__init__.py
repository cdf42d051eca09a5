"""The review console (`/admin/…`): HTML pages over AppService, for admins only (routes.py)."""
