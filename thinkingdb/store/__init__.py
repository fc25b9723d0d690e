"""The store: the SQLite file, ingestion and its readers, lint, canonical form, access control.

``from thinkingdb.store import Store`` keeps working: the store's public names are re-exported here.
"""

from .sqlite import DEFAULT_PATH, Store, Unit

__all__ = ["DEFAULT_PATH", "Store", "Unit"]
