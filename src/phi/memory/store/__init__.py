"""Memory backends behind two small protocols: `RowStore` (rows, edges, vectors, text)
and `Ledger` (learning marks, versioned key/value state, the model-call log). A backend
object provides both (`Store`). Only `phi.memory` imports this package: everything else
goes through `Memory` and its facades."""

from pathlib import Path

from phi.errors import StoreError
from phi.memory.store.base import (
    DERIVED_FROM,
    PUBLISHED_URIS,
    EmbeddingSpec,
    EmbeddingSwap,
    EmbedQueue,
    ForgetReport,
    Hit,
    NamespaceInfo,
    RowEraser,
    RowFilter,
    RowForgetReport,
    RowStore,
    RowWrite,
    Store,
    StoreStats,
)
from phi.memory.store.ledger import Ledger, ModelCallRecord, PassMark, StateEntry, UsageTotals
from phi.memory.store.postgres import PostgresStore
from phi.memory.store.sqlite import SQLiteStore

__all__ = [
    "DERIVED_FROM",
    "PUBLISHED_URIS",
    "EmbedQueue",
    "EmbeddingSpec",
    "EmbeddingSwap",
    "ForgetReport",
    "Hit",
    "Ledger",
    "ModelCallRecord",
    "NamespaceInfo",
    "PassMark",
    "PostgresStore",
    "RowEraser",
    "RowFilter",
    "RowForgetReport",
    "RowStore",
    "RowWrite",
    "SQLiteStore",
    "StateEntry",
    "Store",
    "StoreStats",
    "UsageTotals",
    "open_store",
    "store_location",
]


def open_store(
    location: str | Path, *, auto_upgrade: bool | None = None, pool_max: int | None = None
) -> Store:
    """The backend a location names: a file path or `sqlite://` URL (SQLite), or a
    `postgresql://` / `postgres://` URL (PostgreSQL with pgvector). `auto_upgrade`: whether
    connecting applies pending migrations (None: the backend's default); `pool_max`: the
    PostgreSQL store's connection pool bound (None: its default)."""
    where = store_location(location)
    if isinstance(where, Path):
        return SQLiteStore(where, auto_upgrade=auto_upgrade)
    return PostgresStore(where, auto_upgrade=auto_upgrade, pool_max=pool_max)


def store_location(location: str | Path) -> Path | str:
    """The SQLite file a location names, or the PostgreSQL URL it is."""
    text = str(location)
    if "://" not in text:
        return Path(text).expanduser()
    if text.startswith("sqlite://"):
        return Path(text.removeprefix("sqlite://")).expanduser()
    scheme = text.split("://", 1)[0]
    if scheme in ("postgresql", "postgres"):
        return text
    raise StoreError(
        f"no memory backend for {scheme!r} URLs; use a SQLite file path or a postgresql:// URL"
    )
