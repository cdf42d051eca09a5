"""Storage behind one async interface (`Store`): protocol code calls its methods, never SQL."""

from campusid.idp.store.db import open_store
from campusid.idp.store.errors import Conflict, StoreError, StoreUnavailable
from campusid.idp.store.store import Store

__all__ = ["Conflict", "Store", "StoreError", "StoreUnavailable", "open_store"]
