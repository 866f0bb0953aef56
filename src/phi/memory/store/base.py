"""The `Store` protocol: what a memory backend must do, and nothing more.

Policy (which edges to make, how to fuse rankings, what counts as a duplicate) lives above
this line, in `phi.memory`; a backend only persists rows, vectors, edges and references
and answers filtered queries. The conformance suite in `tests/memory/conformance.py` pins
the behaviour every backend shares, so SQLite, PostgreSQL and TurboPuffer stay
interchangeable for every caller.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from phi.memory.model import Edge, EdgeType, Kind, Row, Status

__all__ = [
    "EmbeddingSpec",
    "ForgetReport",
    "Hit",
    "NamespaceInfo",
    "RowFilter",
    "RowWrite",
    "Store",
    "StoreStats",
    "row_matches",
]


@dataclass(frozen=True, kw_only=True)
class RowFilter:
    """Which rows a query may see. Every field narrows; `None` means no constraint."""

    namespaces: tuple[str, ...] | None = None
    """Exact namespace names. A query about a person passes exactly theirs."""
    kinds: tuple[Kind, ...] | None = None
    statuses: tuple[Status, ...] | None = ("active",)
    author: str | None = None
    since: datetime | None = None
    """Inclusive lower bound on `created_at`."""
    until: datetime | None = None
    """Exclusive upper bound on `created_at`."""
    thread: str | None = None
    """Only rows written with this `meta["thread"]`."""


@dataclass(frozen=True, kw_only=True)
class Hit:
    """A ranked candidate from one retriever, before fusion."""

    row_id: str
    score: float
    """Higher is better: cosine similarity for vectors, BM25 for text."""


@dataclass(frozen=True, kw_only=True)
class RowWrite:
    """A fully formed row with its vector and the references it mentions."""

    row: Row
    vector: npt.NDArray[np.float32]
    refs: tuple[str, ...] = ()
    """Handles, DIDs, URLs and AT-URIs the row mentions (for reference edges)."""


@dataclass(frozen=True, kw_only=True)
class EmbeddingSpec:
    """Which embedding model made a store's vectors."""

    model: str
    dimension: int


@dataclass(frozen=True, kw_only=True)
class NamespaceInfo:
    namespace: str
    rows: int
    active: int
    kinds: Mapping[str, int]
    last_created_at: datetime | None


@dataclass(frozen=True, kw_only=True)
class StoreStats:
    location: str
    backend: str
    embedding: EmbeddingSpec | None
    rows: int
    edges: int
    namespaces: int
    size_bytes: int | None
    """On-disk size where the backend can tell."""


@dataclass(frozen=True, kw_only=True)
class ForgetReport:
    """What `forget` erased."""

    namespace: str
    rows: int
    edges: int
    kinds: Mapping[str, int]


class Store(Protocol):
    """A memory backend. All methods are coroutines; none blocks the event loop."""

    @property
    def location(self) -> str:
        """Where the data lives (a path or URL without secrets)."""
        ...

    async def connect(self) -> None:
        """Open connections, apply pending migrations, refuse foreign or corrupt data."""
        ...

    async def close(self) -> None: ...

    async def embedding(self) -> EmbeddingSpec | None:
        """The embedding model recorded in the store, if any vector was ever written."""
        ...

    async def bind_embedding(self, spec: EmbeddingSpec) -> None:
        """Record `spec`, or raise `EmbedderMismatch` if the store holds another."""
        ...

    async def write(
        self,
        rows: Sequence[RowWrite],
        edges: Sequence[Edge],
        *,
        superseded: Sequence[str] = (),
        at: datetime | None = None,
    ) -> None:
        """Insert rows and edges, and mark `superseded` rows so (as of `at`), in one
        transaction: all of it is stored, or none."""
        ...

    async def add_edges(self, edges: Sequence[Edge]) -> None:
        """Insert edges; an edge that exists (same ends and type) keeps the higher weight."""
        ...

    async def set_status(self, row_ids: Sequence[str], status: Status, *, at: datetime) -> None:
        """Change rows' status (supersession), raising `RowNotFound` for an unknown id."""
        ...

    async def get_rows(self, row_ids: Sequence[str]) -> list[Row]:
        """The rows with these ids, in the order given; unknown ids are left out."""
        ...

    async def get_vectors(self, row_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]: ...

    async def find_by_hash(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Row]:
        """Existing rows keyed by `(namespace, content_hash)` (for idempotent writes)."""
        ...

    async def edges(
        self, row_ids: Sequence[str], *, types: Sequence[EdgeType] | None = None
    ) -> list[Edge]:
        """Edges touching any of `row_ids`, in either direction."""
        ...

    async def vector_search(
        self, vector: npt.NDArray[np.float32], where: RowFilter, *, limit: int
    ) -> list[Hit]:
        """Nearest rows by cosine similarity, best first, exactly within `where`."""
        ...

    async def vector_search_many(
        self, queries: Sequence[tuple[npt.NDArray[np.float32], RowFilter]], *, limit: int
    ) -> list[list[Hit]]:
        """`vector_search` for several queries at once (the write path links whole batches)."""
        ...

    async def text_search(self, terms: Sequence[str], where: RowFilter, *, limit: int) -> list[Hit]:
        """Rows matching any of `terms` ranked by BM25, best first, within `where`."""
        ...

    async def vector_scores(
        self, vector: npt.NDArray[np.float32], row_ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine similarity of each given row to `vector` (unknown ids are left out)."""
        ...

    async def text_scores(
        self, terms: Sequence[str], row_ids: Sequence[str], where: RowFilter
    ) -> dict[str, float]:
        """BM25 of each given row within `where` that matches any of `terms` (the others
        are left out). `where` lets the index skip everything outside the scope."""
        ...

    async def latest(self, where: RowFilter, *, limit: int) -> list[Row]:
        """The most recently created rows within `where`, newest first."""
        ...

    async def latest_many(self, wheres: Sequence[RowFilter], *, limit: int) -> list[list[Row]]:
        """`latest` for several filters at once (the write path links whole batches)."""
        ...

    async def ref_counts(self, refs: Sequence[str]) -> dict[str, int]:
        """How many rows mention each reference."""
        ...

    async def rows_with_ref(self, ref: str, where: RowFilter, *, limit: int) -> list[str]:
        """Ids of the newest rows within `where` that mention `ref`."""
        ...

    async def count(self, where: RowFilter) -> int: ...

    async def namespaces(self, *, prefix: str | None = None) -> list[NamespaceInfo]: ...

    def scan(self, where: RowFilter, *, batch_size: int = 500) -> AsyncIterator[Row]:
        """Every row within `where`, oldest first."""
        ...

    async def forget(self, namespace: str) -> ForgetReport:
        """Hard-delete a namespace: its rows, vectors, text index, references and edges."""
        ...

    async def stats(self) -> StoreStats: ...


def row_matches(row: Row, where: RowFilter) -> bool:
    """Whether `row` passes `where` (the same rule every backend applies in its queries)."""
    return (
        (where.namespaces is None or row.namespace in where.namespaces)
        and (where.kinds is None or row.kind in where.kinds)
        and (where.statuses is None or row.status in where.statuses)
        and (where.author is None or row.author == where.author)
        and (where.since is None or row.created_at >= where.since)
        and (where.until is None or row.created_at < where.until)
        and (where.thread is None or row.meta.get("thread") == where.thread)
    )
