"""Storage behind a narrow interface: protocol code calls these repositories, never SQL."""

from campusid.idp.store.db import Store, open_store
from campusid.idp.store.errors import StoreError, StoreUnavailable

__all__ = ["Store", "StoreError", "StoreUnavailable", "open_store"]
