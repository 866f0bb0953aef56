"""A store's schema version, and what opening it may do, for both backends.

A store's version is the number of migrations it has applied, with the name of the last
(`phi_migrations` holds one row per migration, committed with it). Migration names sort in
the order they were written (`m001_…`), so the last is the greatest. A store holding a
name this phi does not know was upgraded by a newer phi: it is refused before anything is
written (`SchemaTooNew`). A store behind this phi is upgraded on open only when the caller
allows it; creating a fresh store is not an upgrade and is always allowed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from phi.errors import SchemaBehind, SchemaTooNew

__all__ = ["SchemaChange", "SchemaVersion", "pending_migrations"]


@dataclass(frozen=True, kw_only=True)
class SchemaVersion:
    """How far a store's (or this phi's) schema has come."""

    number: int
    """Migrations applied (0: an empty store)."""
    name: str
    """The last migration's name (`''` for an empty store)."""

    @classmethod
    def of(cls, names: Collection[str]) -> SchemaVersion:
        return cls(number=len(names), name=max(names, default=""))

    def __str__(self) -> str:
        return f"{self.number} ({self.name})" if self.name else "0 (empty)"


@dataclass(frozen=True, kw_only=True)
class SchemaChange:
    """What an upgrade did."""

    before: SchemaVersion
    after: SchemaVersion
    applied: tuple[str, ...]
    """Migrations this upgrade applied (none when another process had applied them)."""


def pending_migrations(
    applied: Collection[str], known: Sequence[str], *, upgrade: bool
) -> list[str]:
    """The migrations of `known` (in order) a store that applied `applied` lacks.

    Raises:
        SchemaTooNew: the store applied a migration this phi does not know.
        SchemaBehind: the store is behind, holds a schema already, and `upgrade` is off.
    """
    if not set(applied) <= set(known):
        raise SchemaTooNew(
            store_version=str(SchemaVersion.of(applied)),
            code_version=str(SchemaVersion.of(known)),
        )
    pending = [name for name in known if name not in applied]
    if pending and applied and not upgrade:
        raise SchemaBehind(
            store_version=str(SchemaVersion.of(applied)),
            code_version=str(SchemaVersion.of(known)),
        )
    return pending
