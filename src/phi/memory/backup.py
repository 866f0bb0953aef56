"""Schema upgrades and backups of a store: `upgrade`, `backup` and `restore`.

Each takes a store's location (a SQLite path or a `postgresql://` URL) and works on the
store as a whole, while other processes may have it open: `upgrade` applies this phi's
pending migrations under the backend's migration lock (two hosts upgrading at once apply
each migration once); `backup` writes one consistent snapshot taken while others write
(SQLite's online backup API; `pg_dump` of the store's schema); `restore` makes a store a
copy of a backup, refusing one from a newer phi and, unless `replace`, a store holding data.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from phi.memory.store.admin import SchemaVersion, open_admin

__all__ = [
    "BackupReport",
    "RestoreReport",
    "SchemaVersion",
    "UpgradeReport",
    "backup",
    "restore",
    "upgrade",
]


@dataclass(frozen=True, kw_only=True)
class UpgradeReport:
    location: str
    """The store, fit to show (no password)."""
    before: SchemaVersion
    after: SchemaVersion
    applied: tuple[str, ...]
    """Migrations this call applied, in order (none: the store was up to date)."""


@dataclass(frozen=True, kw_only=True)
class BackupReport:
    location: str
    destination: Path
    version: SchemaVersion
    """The schema version of the snapshot."""
    size: int
    """Bytes written."""
    seconds: float


@dataclass(frozen=True, kw_only=True)
class RestoreReport:
    location: str
    source: Path
    version: SchemaVersion
    """The restored store's schema version (opening it upgrades it, when allowed)."""
    seconds: float


async def upgrade(location: str | Path) -> UpgradeReport:
    """Apply this phi's pending migrations to the existing store at `location`.

    Raises:
        SchemaTooNew: the store was upgraded by a newer phi (nothing is written).
        StoreError: no store there, or the store failed.
    """
    admin = open_admin(location)
    change = await admin.upgrade()
    return UpgradeReport(
        location=admin.location, before=change.before, after=change.after, applied=change.applied
    )


async def backup(
    location: str | Path, destination: str | Path, *, pg_tools: Path | None = None
) -> BackupReport:
    """Write a consistent snapshot of the store at `location` to the new file
    `destination` (0600) while other processes may write to the store.

    `pg_tools`: the folder of PostgreSQL's `pg_dump` (default: found on `PATH`).
    """
    started = time.perf_counter()
    admin = open_admin(location, pg_tools=pg_tools)
    target = Path(str(destination)).expanduser()  # noqa: ASYNC240 (no I/O: `~` from HOME)
    version = await admin.backup(target)
    return BackupReport(
        location=admin.location,
        destination=target,
        version=version,
        size=(await anyio.Path(target).stat()).st_size,
        seconds=time.perf_counter() - started,
    )


async def restore(
    source: str | Path,
    location: str | Path,
    *,
    replace: bool = False,
    pg_tools: Path | None = None,
) -> RestoreReport:
    """Make the store at `location` a copy of the backup `source` (made by `backup` from
    a store of the same backend); stop other processes using the store first.

    Raises:
        SchemaTooNew: the backup is of a newer phi's store (nothing is written).
        RestoreTargetNotEmpty: the store holds data and `replace` is off.
    """
    started = time.perf_counter()
    admin = open_admin(location, pg_tools=pg_tools)
    backup_file = Path(str(source)).expanduser()  # noqa: ASYNC240 (no I/O: `~` from HOME)
    version = await admin.restore(backup_file, replace=replace)
    return RestoreReport(
        location=admin.location,
        source=backup_file,
        version=version,
        seconds=time.perf_counter() - started,
    )
