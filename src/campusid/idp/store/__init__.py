"""Storage behind a narrow interface: protocol code calls these repositories, never SQL."""

from campusid.idp.store.db import Store, open_store

__all__ = ["Store", "open_store"]
