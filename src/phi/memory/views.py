"""Read-only views for pages about people: the facades the web's person page and memory
graph read through, so nothing outside `phi.memory` touches a store.

Each view reads one person's namespace (`phi-users-{did}`) or, for `rows_mentioning`, only
the rows that carry a reference; none writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from phi.errors import NamespaceNotFound
from phi.memory.memory import Memory
from phi.memory.model import Row, user_namespace
from phi.memory.store import RowFilter

__all__ = ["PersonRows", "person_rows", "row_vectors", "rows_mentioning"]


@dataclass(frozen=True, kw_only=True)
class PersonRows:
    """The rows a page about one person shows, all from their own namespace."""

    namespace: str
    observations: tuple[Row, ...]
    """Active observations, newest first."""
    exchanges: tuple[Row, ...]
    """The newest active verbatim exchanges (`interaction` rows), newest first."""
    summary: Row | None
    """The newest active relationship summary, if one was written."""
    kinds: Mapping[str, int]
    """Row counts by kind (superseded rows included)."""


async def person_rows(
    memory: Memory, did: str, *, observations: int = 200, exchanges: int = 10
) -> PersonRows:
    """What `memory` holds in the namespace of `did`; `NamespaceNotFound` if nothing."""
    namespace = user_namespace(did)
    info = next(
        (i for i in await memory.namespaces(prefix=namespace) if i.namespace == namespace), None
    )
    if info is None:
        raise NamespaceNotFound(namespace)
    scope = (namespace,)
    wheres = [
        RowFilter(namespaces=scope, kinds=("observation",)),
        RowFilter(namespaces=scope, kinds=("interaction",)),
        RowFilter(namespaces=scope, kinds=("summary",)),
    ]
    observed = await memory.rows.latest(wheres[0], limit=observations)
    recent = await memory.rows.latest(wheres[1], limit=exchanges)
    summaries = await memory.rows.latest(wheres[2], limit=1)
    return PersonRows(
        namespace=namespace,
        observations=tuple(observed),
        exchanges=tuple(recent),
        summary=summaries[0] if summaries else None,
        kinds=dict(info.kinds),
    )


async def rows_mentioning(memory: Memory, ref: str, *, limit: int = 200) -> list[Row]:
    """The newest rows (any namespace, any status) that mention `ref` (a handle, DID or
    URL), newest first."""
    ids = await memory.rows.rows_with_ref(ref, RowFilter(statuses=None), limit=limit)
    return await memory.rows.get_rows(ids)


async def row_vectors(memory: Memory, row_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
    """The stored embedding of each row (unknown ids are left out)."""
    return await memory.rows.get_vectors(row_ids)
