"""Upgrades and backups of a store: `StoreAdmin`, one implementation per backend.

These act on a store's location, not through an open handle: an upgrade may run while
other processes have the store open (it takes the backend's migration lock), a backup
reads one consistent snapshot while others write, and a restore writes a whole store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from phi.memory.store import store_location
from phi.memory.store._pg_admin import PostgresAdmin
from phi.memory.store._schema_version import SchemaChange, SchemaVersion
from phi.memory.store._sqlite_admin import SQLiteAdmin

__all__ = ["SchemaChange", "SchemaVersion", "StoreAdmin", "open_admin"]


class StoreAdmin(Protocol):
    """Schema upgrades, backups and restores of one store."""

    @property
    def location(self) -> str:
        """The store, fit to show (a URL without its password)."""
        ...

    async def upgrade(self) -> SchemaChange:
        """Apply this phi's pending migrations (`SchemaTooNew` for a newer store's)."""
        ...

    async def backup(self, destination: Path) -> SchemaVersion:
        """Write one consistent snapshot of the store, taken while others may write, to
        the new file `destination` (0600); return the snapshot's schema version."""
        ...

    async def restore(self, source: Path, *, replace: bool) -> SchemaVersion:
        """Make the store a copy of the backup `source`; return its schema version.

        Refuses a backup from a newer phi (`SchemaTooNew`), and a store that holds data
        unless `replace` (`RestoreTargetNotEmpty`), before writing anything.
        """
        ...


def open_admin(location: str | Path, *, pg_tools: Path | None = None) -> StoreAdmin:
    """The admin of the store at `location` (as `open_store` reads it). `pg_tools`: the
    folder of `pg_dump` and `pg_restore` (default: found on `PATH`)."""
    where = store_location(location)
    if isinstance(where, Path):
        return SQLiteAdmin(where)
    return PostgresAdmin(where, tools=pg_tools)
