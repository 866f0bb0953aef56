"""Memory backends behind one `Store` protocol."""

from phi.memory.store.base import (
    EmbeddingSpec,
    ForgetReport,
    Hit,
    NamespaceInfo,
    RowFilter,
    RowWrite,
    Store,
    StoreStats,
)
from phi.memory.store.sqlite import SQLiteStore

__all__ = [
    "EmbeddingSpec",
    "ForgetReport",
    "Hit",
    "NamespaceInfo",
    "RowFilter",
    "RowWrite",
    "SQLiteStore",
    "Store",
    "StoreStats",
    "open_store",
]


def open_store(location: str) -> Store:
    """The backend a location names: a file path (SQLite) today; URLs select others."""
    from phi.errors import StoreError

    if "://" in location and not location.startswith("sqlite://"):
        scheme = location.split("://", 1)[0]
        raise StoreError(f"no memory backend for {scheme!r} URLs yet; use a SQLite file path")
    return SQLiteStore(location.removeprefix("sqlite://"))
