"""Upkeep of a PostgreSQL store's vector layout: `settle` and `cluster`.

A PostgreSQL store writes new vectors `fresh`, outside its HNSW graph, so a write never
waits for the graph (`_pg_write.FRESH_MAX`); scoped recall searches its scopes exactly and
does not need them there. `settle` puts them into the graph off the write path, so a wide
(unscoped) search keeps reading them from the graph instead of scanning them exactly. It
takes no write lock: writers go on meanwhile. `cluster` lays rows and vectors out in
namespace order again, which keeps a scoped search reading few pages after many writes;
it locks each table while it rewrites it, so it is for a quiet hour.

A SQLite store searches its vectors exactly and keeps no graph or namespace layout:
both are no-ops there, reported as such (`UpkeepReport.applies`), so one schedule can
serve stores of either kind.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from phi.errors import InvalidInput, StoreError
from phi.memory.store import store_location
from phi.memory.store._pg_admin import PostgresAdmin

__all__ = ["UpkeepReport", "cluster", "settle"]


@dataclass(frozen=True, kw_only=True)
class UpkeepReport:
    location: str
    """The store, fit to show (no password)."""
    applies: bool
    """False for a SQLite store, which has nothing of the kind to do."""
    settled: int = 0
    """Vectors put into the HNSW graph (`settle`)."""
    seconds: float = 0.0


async def _sqlite(path: Path) -> UpkeepReport:
    if not await anyio.Path(path).is_file():
        raise StoreError(f"no phi memory store at {str(path)!r}")
    return UpkeepReport(location=str(path), applies=False)


async def settle(location: str | Path, *, batch: int = 1000) -> UpkeepReport:
    """Put every fresh vector of the store at `location` into its HNSW graph, `batch` per
    transaction, while others write.

    Raises:
        StoreError: no store there, or the store failed.
    """
    if batch < 1:
        raise InvalidInput(f"batch {batch} must be at least 1")
    started = time.perf_counter()
    where = store_location(location)
    if isinstance(where, Path):
        return await _sqlite(where)
    admin = PostgresAdmin(where, tools=None)
    settled = await admin.settle(batch=batch)
    return UpkeepReport(
        location=admin.location,
        applies=True,
        settled=settled,
        seconds=time.perf_counter() - started,
    )


async def cluster(location: str | Path) -> UpkeepReport:
    """Rewrite the rows and vectors of the store at `location` in namespace order and
    vacuum them (each table locked while it is rewritten).

    Raises:
        StoreError: no store there, or the store failed.
    """
    started = time.perf_counter()
    where = store_location(location)
    if isinstance(where, Path):
        return await _sqlite(where)
    admin = PostgresAdmin(where, tools=None)
    await admin.cluster()
    return UpkeepReport(
        location=admin.location, applies=True, seconds=time.perf_counter() - started
    )
