"""`RowEraser`: forgetting one row and what was made from it, a capability of its own.

Kept apart from `RowStore` (which already has too many methods): a backend provides it
beside the rest, and `tests/memory/conformance_forget_row.py` pins what it does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["RowEraser", "RowForgetReport"]


@dataclass(frozen=True, kw_only=True)
class RowForgetReport:
    """What `forget_row` erased."""

    row_id: str
    """The row asked for."""
    erased: tuple[str, ...]
    """Every row erased: `row_id` first, then the rows derived from it, by id."""
    edges: int
    """Edges erased with them (every edge touching an erased row)."""
    kinds: Mapping[str, int] = field(default_factory=dict)
    """Rows erased per kind."""
    reinstated: tuple[str, ...] = ()
    """Rows an erased row had superseded that nothing else supersedes: current again."""
    published: tuple[str, ...] = ()
    """AT-URIs of public records phi published from erased rows: still on its PDS, for the
    operator to delete (see `PUBLISHED_URIS`)."""

    @property
    def derived(self) -> tuple[str, ...]:
        """The rows erased because they were made from `row_id` alone."""
        return self.erased[1:]

    def to_json(self) -> dict[str, object]:
        return {
            "row_id": self.row_id,
            "rows": len(self.erased),
            "edges": self.edges,
            "kinds": dict(self.kinds),
            "erased": list(self.erased),
            "derived": list(self.derived),
            "reinstated": list(self.reinstated),
            "published": list(self.published),
        }


class RowEraser(Protocol):
    """Hard-deletes one row with what was derived from it."""

    async def forget_row(
        self, row_id: str, *, confine: Callable[[str], bool] | None = None
    ) -> RowForgetReport:
        """Erase `row_id` and, repeatedly, every row whose only sources are erased rows
        (`phi.memory.store._derivation`: `meta["derived_from"]`, `phi-memory:` URIs, and
        learned rows made from the URIs of erased rows), in one transaction: with each row
        go its vector, text entry, references, edges and ledger marks. A row an erased row
        had superseded becomes current again when nothing else supersedes it.

        `confine` (a namespace predicate) limits the whole erase to a client's namespaces:
        a row outside them is reported as `RowNotFound`, as if it did not exist, and a
        derived row outside them stays. A failure anywhere erases nothing.
        """
        ...
