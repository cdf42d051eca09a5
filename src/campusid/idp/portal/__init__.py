"""The developer portal (`/developer/…`): HTML pages over AppService (routes.py)."""
