"""The store: the SQLite file, ingestion and its readers, lint, canonical form, access control.

``from thinkingdb.store import Store`` keeps working: the store's public names are re-exported here
(``Unit`` on first use: a question on facts does not load the units' module).
"""

from .sqlite import DEFAULT_PATH, Store

__all__ = ["DEFAULT_PATH", "Store", "Unit"]


def __getattr__(name: str):
    if name == "Unit":
        from .unit import Unit
        globals()["Unit"] = Unit
        return Unit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
