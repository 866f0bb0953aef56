"""The `RowStore` protocol (rows, edges, vectors, text) and `Store`, a whole backend.

A backend is two small protocols: `RowStore` here persists rows, vectors, edges and
references and answers filtered queries; `Ledger` (`phi.memory.store.ledger`) keeps the
bookkeeping (learning marks, versioned key/value state, the model-call log). `Store` is
both, as one backend object provides them. Policy (which edges to make, how to fuse
rankings, what counts as a duplicate) lives above this line, in `phi.memory`, and only
`phi.memory` ever holds a store: `Memory` is the one door. The conformance suites
`tests/memory/conformance_rows.py` and `tests/memory/conformance_ledger.py` pin the
behaviour every backend shares, so SQLite, PostgreSQL and TurboPuffer stay interchangeable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from phi.memory.model import Edge, EdgeType, Kind, Row, Status
from phi.memory.store.ledger import Ledger, ModelCallRecord, PassMark, StateEntry, UsageTotals
from phi.memory.store.row_forget import RowEraser, RowForgetReport

__all__ = [
    "DERIVED_FROM",
    "PUBLISHED_URIS",
    "EmbeddingSpec",
    "ForgetReport",
    "Hit",
    "HybridQuery",
    "HybridSignals",
    "HybridSteps",
    "Ledger",
    "ModelCallRecord",
    "NamespaceInfo",
    "PassMark",
    "RowEraser",
    "RowFilter",
    "RowForgetReport",
    "RowStore",
    "RowWrite",
    "StateEntry",
    "Store",
    "StoreStats",
    "UsageTotals",
    "gather_stepwise",
    "row_matches",
]


DERIVED_FROM: Final = "derived_from"
"""`meta` key: the ids of the rows a row was made from (a promoted public card names the
person's observation). `forget` follows it, so a copy goes with its source."""
PUBLISHED_URIS: Final = "published_uris"
"""`meta` key: AT-URIs of public records phi published from a row (on its own PDS).
`forget` cannot delete those (the memory engine has no network client): it lists them in
`ForgetReport.published` for the operator to delete."""


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


SeedRule = Callable[[Sequence[Hit], Sequence[Hit]], Sequence[str]]
"""Given the dense and text candidates, which rows the graph walk starts from."""


@dataclass(frozen=True, kw_only=True)
class HybridQuery:
    """Everything one hybrid recall asks of a store, so a backend can answer in one trip."""

    vector: npt.NDArray[np.float32]
    terms: tuple[str, ...]
    where: RowFilter
    candidates: int
    """How many rows each retriever proposes."""
    graph_types: tuple[EdgeType, ...]
    hops: int
    seeds: SeedRule
    """Policy from the caller (a pure function): the store only runs it."""


@dataclass(frozen=True, kw_only=True)
class HybridSignals:
    """The raw material of a ranking; fusion and smoothing happen in `phi.memory.recall`."""

    dense: list[Hit]
    """The dense candidates, then the exact cosine of every row the graph walk reached."""
    text: list[Hit]
    """The BM25 candidates, then the exact BM25 of every reached row that matches."""
    from_dense: frozenset[str]
    """Rows the dense retriever proposed itself."""
    from_text: frozenset[str]
    """Rows the text retriever proposed itself (the rest came through the graph)."""
    adjacency: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """The graph within `hops` of the seeds, as adjacency lists."""
    contents: Mapping[str, str] = field(default_factory=dict)
    """The content of every row in `dense` and `text`, read with them: recall's speaker
    lift needs it, and a second trip for whole rows cost a third of a search at 1M rows."""
    threads: Mapping[str, str] = field(default_factory=dict)
    """The thread of every row in `contents` that has one, read with it: recall's thread
    lift needs it."""
    unembedded: int = 0
    """Rows within the query's filter that wait for their vector (`count_unembedded`):
    the dense retriever cannot see them. Read with the rest, so saying it costs no trip."""


@dataclass(frozen=True, kw_only=True)
class RowWrite:
    """A fully formed row with its vector and the references it mentions."""

    row: Row
    vector: npt.NDArray[np.float32] | None
    """`None`: embed later. The row is stored (and text-searchable) at once and waits in
    the store's embedding queue until `add_vectors` gives its vector."""
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
    """Every row erased: the namespace's and those derived from it elsewhere."""
    edges: int
    kinds: Mapping[str, int]
    """Rows erased per kind (and, from `Memory.forget`, user block versions)."""
    derived: Mapping[str, int] = field(default_factory=dict)
    """Rows erased outside the namespace, per namespace (e.g. promoted `phi-public` cards)."""
    published: tuple[str, ...] = ()
    """AT-URIs of public records phi published from erased rows: still on its PDS, for the
    operator to delete (see `PUBLISHED_URIS`)."""
    state: int = 0
    """Versions of learning state erased with the rows (e.g. the person's block)."""


class RowStore(Protocol):
    """Rows, edges, vectors and text of a memory backend. All methods are coroutines;
    none blocks the event loop."""

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
    ) -> list[Row]:
        """Insert rows and edges, and mark `superseded` rows so (as of `at`), in one
        transaction: all of it is stored, or none.

        The write is an idempotent upsert on `(namespace, content_hash)`, decided inside the
        transaction: a row whose identity is already stored (written by another process a
        moment ago, say) is not inserted again, and edges naming it are redirected to the
        stored row. Returns the stored row for each write, in order.
        """
        ...

    def bulk_load(self) -> AbstractAsyncContextManager[bool]:
        """A block for writing many rows into an empty store (a migration, a benchmark's
        fill): inside it the backend may defer index upkeep, which it finishes on leaving
        the block, even when the block raised. Yields whether it does.

        Writes and reads inside the block behave as outside it (the same upserts, the same
        results); only their speed changes. A store holding rows, or open in another
        process, keeps the ordinary path (yields False), as does a backend with nothing to
        defer. A load interrupted by a crash is finished when the store is next opened.
        """
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

    async def hybrid(self, query: HybridQuery) -> HybridSignals:
        """The signals of one hybrid recall. A backend without a faster way returns
        `await gather_stepwise(self, query)`."""
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

    async def forget(
        self,
        namespace: str,
        *,
        author: str | None = None,
        state: Sequence[tuple[str, str]] = (),
    ) -> ForgetReport:
        """Hard-delete a namespace and everything derived from it, in one transaction.

        Erased: the namespace's rows; with `author` (a DID), every row in any namespace
        whose `author` is that DID or whose `source_uris` name one of their records
        (`at://{author}/...`); then, repeatedly, every row derived from an erased row (its
        `meta[DERIVED_FROM]` names it, or a `causal` edge leads to it from one). With each
        row go its vector, text index entry, references, edges and ledger marks; the
        ledger's `(scope, key)` `state` named here goes in the same transaction (a ledger
        shares its backend with the rows). A failure anywhere erases nothing.
        Raises `NamespaceNotFound` when there was nothing to erase.
        """
        ...

    async def stats(self) -> StoreStats: ...

    # -- for copying a store (`phi.memory.transfer`) ------------------------------------

    async def refs_of(self, row_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """The references each given row mentions, sorted (rows with none are left out)."""
        ...


class EmbedQueue(Protocol):
    """The embedding queue: rows written without a vector (`RowWrite.vector` None, as
    `Memory.remember(..., defer_embedding=True)` writes them) wait in it until
    `phi.memory.ingest.embed_pending` gives them one (`conformance_rows.py`'s queue tests)."""

    async def unembedded(self, *, limit: int) -> list[Row]:
        """Rows still waiting for their vector, oldest write first. The queue is durable:
        it is written in the rows' own transaction."""
        ...

    async def count_unembedded(self, where: RowFilter) -> int:
        """How many rows within `where` wait for their vector (dense recall cannot see
        them yet; text recall can)."""
        ...

    async def add_vectors(
        self, vectors: Mapping[str, npt.NDArray[np.float32]], edges: Sequence[Edge]
    ) -> None:
        """Store the vectors of queued rows and the edges found with them (semantic
        links), in one transaction; each row leaves the queue. A row erased meanwhile is
        skipped, with its edges; a row that already has its vector keeps it."""
        ...


class EmbeddingSwap(Protocol):
    """Moving a store to another embedding model: new vectors are staged beside the live
    ones, and one transaction swaps them in with the new model, so an interrupted move
    leaves the store as it was and a rerun continues where it stopped (`phi.memory.reembed`;
    its conformance suite is `conformance_reembed.py`; the model the store holds now is
    `RowStore.embedding`)."""

    async def stage_vectors(
        self, spec: EmbeddingSpec, vectors: Mapping[str, npt.NDArray[np.float32]]
    ) -> None:
        """Keep `vectors` (by row id) for a later `swap_embedding` to `spec`, without
        touching the live vectors. Vectors staged for another model are dropped first;
        ids of rows that no longer exist are ignored; a forgotten row's vector goes too."""
        ...

    async def unstaged(self, spec: EmbeddingSpec, *, limit: int) -> list[Row]:
        """Up to `limit` rows (any status, in insertion order) with no vector staged for
        `spec`."""
        ...

    async def count_unstaged(self, spec: EmbeddingSpec) -> int:
        """How many rows have no vector staged for `spec`."""
        ...

    async def swap_embedding(
        self, spec: EmbeddingSpec, vectors: Mapping[str, npt.NDArray[np.float32]]
    ) -> int:
        """Stage `vectors`, then, if every row has a vector staged for `spec`, replace all
        live vectors with them and record `spec` as the store's model, in one transaction.

        Returns how many rows still have none (rows written meanwhile): 0 means the store
        moved; otherwise only the staging happened and the caller stages the rest.
        """
        ...


class Store(RowStore, EmbedQueue, EmbeddingSwap, Ledger, RowEraser, Protocol):
    """A whole backend: one object that is a `RowStore`, an `EmbedQueue`, an
    `EmbeddingSwap`, a `Ledger` and a `RowEraser` (one database, so `forget` can take rows,
    marks and state in one transaction). Each capability is a protocol of its own, kept
    small, with its own conformance tests."""


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


def merge_hits(hits: list[Hit], scores: Mapping[str, float]) -> list[Hit]:
    """`hits`, then a hit for each scored row not among them, in `scores`' order."""
    known = {h.row_id for h in hits}
    return hits + [Hit(row_id=i, score=v) for i, v in scores.items() if i not in known]


class HybridSteps(Protocol):
    """The reads one hybrid recall is made of (a `RowStore` has them all; a backend may
    also bind them to one connection, as the PostgreSQL store does)."""

    async def vector_search(
        self, vector: npt.NDArray[np.float32], where: RowFilter, *, limit: int
    ) -> list[Hit]: ...

    async def text_search(
        self, terms: Sequence[str], where: RowFilter, *, limit: int
    ) -> list[Hit]: ...

    async def edges(
        self, row_ids: Sequence[str], *, types: Sequence[EdgeType] | None = None
    ) -> list[Edge]: ...

    async def vector_scores(
        self, vector: npt.NDArray[np.float32], row_ids: Sequence[str]
    ) -> dict[str, float]: ...

    async def text_scores(
        self, terms: Sequence[str], row_ids: Sequence[str], where: RowFilter
    ) -> dict[str, float]: ...

    async def get_rows(self, row_ids: Sequence[str]) -> list[Row]: ...

    async def count_unembedded(self, where: RowFilter) -> int: ...


async def gather_stepwise(store: HybridSteps, query: HybridQuery) -> HybridSignals:
    """`RowStore.hybrid` from the store's other methods, one call per step."""
    dense = await store.vector_search(query.vector, query.where, limit=query.candidates)
    text = await store.text_search(query.terms, query.where, limit=query.candidates)
    from_dense, from_text = frozenset(h.row_id for h in dense), frozenset(h.row_id for h in text)
    adjacency: dict[str, set[str]] = {}
    explored: set[str] = set()
    frontier = set(query.seeds(dense, text)) if query.graph_types else set()
    for _ in range(query.hops):
        if not frontier:
            break
        for edge in await store.edges(sorted(frontier), types=query.graph_types):
            adjacency.setdefault(edge.src, set()).add(edge.dst)
            adjacency.setdefault(edge.dst, set()).add(edge.src)
        explored |= frontier
        frontier = set(adjacency) - explored
    extra = sorted(set(adjacency) - from_dense - from_text)
    if extra:
        dense = merge_hits(dense, await store.vector_scores(query.vector, extra))
        text = merge_hits(text, await store.text_scores(query.terms, extra, query.where))
    hits = list(dict.fromkeys(h.row_id for h in [*dense, *text]))
    rows = await store.get_rows(hits)
    return HybridSignals(
        dense=dense,
        text=text,
        from_dense=from_dense,
        from_text=from_text,
        adjacency={k: sorted(v) for k, v in adjacency.items()},
        contents={r.row_id: r.content for r in rows},
        threads={r.row_id: t for r in rows if (t := r.thread)},
        unembedded=await store.count_unembedded(query.where),
    )
