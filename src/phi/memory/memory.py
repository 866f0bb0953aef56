"""`Memory`: the engine's one public object. Every surface (CLI, agent, MCP, web) calls it.

It is the only door to the backend: code outside `phi.memory` never touches `store`
(tests/test_layers.py checks). Besides its own methods it hands out small facades:
`state` (versioned key/value state), and `phi.memory.views` reads the person and graph
data the web page shows. Inside the engine, `rows` (`RowStore`) serves ingest, recall and
preload, and `ledger` (`Ledger`) the learning passes' bookkeeping.

async with Memory.open("~/.phi/memory.db") as memory:
    await memory.remember(
        NewRow(content="likes rust", namespace=user_namespace(did), kind="observation")
    )
    hits = await memory.search("what language does she like?", namespace=...)
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import anyio
from pydantic import SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import JsonSchemaValue

from phi.errors import InvalidInput, NamespaceNotFound, RowNotFound
from phi.memory.embed import Embedder, MiniLMEmbedder
from phi.memory.ingest import IngestPolicy, embed_pending, write_rows
from phi.memory.model import (
    BLOCK_SCOPE,
    EDGE_TYPES,
    STATUSES,
    USER_BLOCK_PREFIX,
    USER_NAMESPACE_PREFIX,
    Edge,
    EdgeType,
    Kind,
    NewRow,
    Row,
    Status,
    ensure_utc,
    utc_now,
    validate_namespace,
    validate_text,
)
from phi.memory.preload import ContextWindow, build_window
from phi.memory.recall import DEFAULT_RECIPE, Found, RecallRecipe, recall
from phi.memory.reembed import ReembedProgress, ReembedReport, reembed_rows
from phi.memory.serial import spread, spread_schema
from phi.memory.state import KeyValueState
from phi.memory.store import (
    EmbeddingSpec,
    ForgetReport,
    Ledger,
    NamespaceInfo,
    RowFilter,
    RowForgetReport,
    RowStore,
    Store,
    StoreStats,
)
from phi.memory.store import open_store as _open_store

__all__ = ["MAX_WALK_DEPTH", "Memory", "Neighbour", "Step"]

_MAX_HISTORY = 1000
"""A guard against a cycle in damaged data; no real belief changes this often."""

Namespaces = str | Sequence[str] | None

EDGE_JSON: Final = ("edge_type", "weight")
"""What the JSON of a neighbour or a walk step shows of its edge (the ends are implied)."""


@dataclass(frozen=True, kw_only=True)
class Neighbour:
    """A row linked to another, with the edge that links them."""

    edge: Edge
    row: Row

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return spread(handler(self), "edge", EDGE_JSON)

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> JsonSchemaValue:
        return spread_schema(core_schema, handler, "edge", EDGE_JSON)


MAX_WALK_DEPTH: Final = 3
"""How far `walk` goes: past three hops nearly every row of a busy namespace is reachable."""


@dataclass(frozen=True, kw_only=True)
class Step:
    """A row reached by `Memory.walk`."""

    depth: int
    """Hops from the start row (1-3)."""
    via: str
    """The row it was reached from."""
    edge: Edge
    """The edge between `via` and this row."""
    row: Row

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        return {
            "depth": data.pop("depth"),
            "via": data.pop("via"),
            **spread(data, "edge", EDGE_JSON),
        }

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> JsonSchemaValue:
        return spread_schema(core_schema, handler, "edge", EDGE_JSON)


@dataclass(kw_only=True)
class Memory:
    """phi's memory over one store and one embedder."""

    store: Store
    embedder: Embedder = field(default_factory=MiniLMEmbedder)
    ingest_policy: IngestPolicy = field(default_factory=IngestPolicy)
    recipe: RecallRecipe = DEFAULT_RECIPE
    writer: str | None = None
    """Stamped as `written_by` on every row this memory writes (see `as_writer`)."""
    _write_lock: anyio.Lock = field(default_factory=anyio.Lock, init=False, repr=False)

    @classmethod
    def open(
        cls,
        location: str | Path,
        *,
        embedder: Embedder | None = None,
        ingest_policy: IngestPolicy | None = None,
        recipe: RecallRecipe = DEFAULT_RECIPE,
        auto_upgrade: bool | None = None,
        pool_max: int | None = None,
    ) -> Memory:
        """A memory at `location` (a SQLite file path); connect with `async with`.
        `auto_upgrade`: whether connecting applies pending schema migrations (None: the
        backend's default, on for SQLite and off for PostgreSQL). `pool_max`: connections
        a PostgreSQL store's pool may hold (None: its default; SQLite has no pool)."""
        return cls(
            store=_open_store(location, auto_upgrade=auto_upgrade, pool_max=pool_max),
            embedder=embedder or MiniLMEmbedder(),
            ingest_policy=ingest_policy or IngestPolicy(),
            recipe=recipe,
        )

    async def __aenter__(self) -> Self:
        await self.store.connect()
        try:
            await self._check_embedder()
        except BaseException:
            await self.store.close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.store.close()

    @property
    def rows(self) -> RowStore:
        """The backend's rows, edges, vectors and text: for the engine's own modules
        (ingest, recall, preload, the learning passes), never for code outside `phi.memory`."""
        return self.store

    @property
    def ledger(self) -> Ledger:
        """The backend's bookkeeping (learning marks, state, the model-call log): for the
        learning passes, never for code outside `phi.memory`."""
        return self.store

    @property
    def state(self) -> KeyValueState:
        """Versioned key/value state for callers outside the engine (the owner gate's
        requests, a persisted rate limit): the one door to the ledger's state."""
        return KeyValueState(ledger=self.store)

    async def _check_embedder(self) -> None:
        await self.store.bind_embedding(
            EmbeddingSpec(model=self.embedder.name, dimension=self.embedder.dimension)
        )

    def as_writer(self, label: str) -> Memory:
        """This memory (the same open store and write lock) writing as `label`: each row it
        writes records `label` as `written_by`. The server of one bearer token writes
        through one; it is never entered or closed itself (its parent owns the store)."""
        view = dataclasses.replace(self, writer=label)
        view._write_lock = self._write_lock  # one writer per process, whoever it writes as
        return view

    # -- writing -------------------------------------------------------------------------

    async def remember(self, row: NewRow) -> Row:
        """Store one row (or return the existing one: the same text and sources make one
        row). `NewRow.interaction(...)` builds a verbatim exchange."""
        (stored,) = await self.remember_many([row])
        return stored

    async def remember_many(
        self, rows: Sequence[NewRow], *, defer_embedding: bool = False
    ) -> list[Row]:
        """Store several rows in one transaction, embedding them in batches.

        `defer_embedding`: store them without embedding (text search finds them at once)
        and queue them durably; `embed_pending` embeds the queue. Until then dense recall
        cannot see them: `unembedded` says how many wait.
        """
        if self.writer is not None:
            rows = [dataclasses.replace(r, written_by=self.writer) for r in rows]
        async with self._write_lock:
            return await write_rows(
                self.store,
                self.embedder,
                rows,
                policy=self.ingest_policy,
                defer_embedding=defer_embedding,
            )

    async def embed_pending(self, *, batch: int = 64) -> int:
        """Embed every queued row (written with `defer_embedding`), `batch` at a time,
        oldest first; return how many were embedded. Safe to run beside writers."""
        total = 0
        while done := await embed_pending(
            self.store, self.embedder, policy=self.ingest_policy, batch=batch
        ):
            total += done
        return total

    async def unembedded(self, *, namespace: Namespaces = None) -> int:
        """How many rows (of `namespace`, or all) wait for their vector."""
        return await self.store.count_unembedded(
            self._filter(namespace, None, None, None, None, None)
        )

    # -- reading -------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        namespace: Namespaces = None,
        kinds: Sequence[Kind] | None = None,
        status: Status | None = "active",
        author: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        recipe: RecallRecipe | None = None,
        now: datetime | None = None,
    ) -> Found:
        """Hybrid recall: the best `limit` rows for `query`, best first.

        A query naming a namespace only ever sees that namespace (graph expansion included).
        `status=None` includes superseded rows.

        Rows written with `defer_embedding` are found by their words at once but not by
        meaning until `embed_pending` gives them a vector: `Found.unembedded` says how many
        rows of this search's scope (its namespaces and filters) wait, so a missing answer
        is not taken for an absent one. The store counts them in the same read as the
        recall, from the embedding queue alone (indexed by namespace).
        """
        if not query.strip():
            raise InvalidInput("empty query; say what to recall")
        validate_text(query, what="query")
        if not 1 <= limit <= 1000:
            raise InvalidInput(f"limit {limit} is out of range 1-1000")
        where = self._filter(namespace, kinds, status, author, since, until)
        found = await recall(
            self.store,
            self.embedder,
            query,
            where,
            limit=limit,
            now=ensure_utc(now) if now else utc_now(),
            recipe=recipe or self.recipe,
        )
        if not found:
            await self._require_namespaces(where)
        return found

    async def search_kinds(
        self,
        query: str,
        limits: Mapping[Kind, int],
        *,
        namespace: Namespaces = None,
        now: datetime | None = None,
    ) -> dict[Kind, Found]:
        """`search` once per kind, each kind with its own limit, the query embedded once
        (a prompt reads a person's summary, observations, exchanges and research for one
        text). Active rows only; each kind's `Found.unembedded` counts that kind's rows."""
        if not query.strip():
            raise InvalidInput("empty query; say what to recall")
        validate_text(query, what="query")
        for kind, limit in limits.items():
            if not 1 <= limit <= 1000:
                raise InvalidInput(f"limit {limit} for {kind!r} is out of range 1-1000")
        wheres = {k: self._filter(namespace, [k], "active", None, None, None) for k in limits}
        vector = (await self.embedder.embed([query]))[0]
        found = {
            kind: await recall(
                self.store,
                self.embedder,
                query,
                where,
                limit=limits[kind],
                now=ensure_utc(now) if now else utc_now(),
                recipe=self.recipe,
                vector=vector,
            )
            for kind, where in wheres.items()
        }
        if not any(found.values()) and wheres:
            await self._require_namespaces(next(iter(wheres.values())))
        return found

    async def _require_namespaces(self, where: RowFilter) -> None:
        if where.namespaces is not None:
            for name in where.namespaces:
                if await self.store.count(RowFilter(namespaces=(name,), statuses=None)) == 0:
                    raise NamespaceNotFound(name)

    def _filter(
        self,
        namespace: Namespaces,
        kinds: Sequence[Kind] | None,
        status: Status | None,
        author: str | None,
        since: datetime | None,
        until: datetime | None,
    ) -> RowFilter:
        names = (
            (namespace,) if isinstance(namespace, str) else tuple(namespace) if namespace else None
        )
        for name in names or ():
            validate_namespace(name)
        if author is not None:
            validate_text(author, what="author")
        if status is not None and status not in STATUSES:
            raise InvalidInput(f"unknown status {status!r}; expected one of {', '.join(STATUSES)}")
        return RowFilter(
            namespaces=names,
            kinds=tuple(kinds) if kinds else None,
            statuses=(status,) if status else None,
            author=author,
            since=ensure_utc(since) if since else None,
            until=ensure_utc(until) if until else None,
        )

    async def get(self, row_id: str) -> Row:
        """One row by id."""
        rows = await self.store.get_rows([validate_text(row_id, what="row id")])
        if not rows:
            raise RowNotFound(row_id)
        return rows[0]

    async def history(self, row_id: str) -> list[Row]:
        """What phi believed and when: `row_id`'s supersession chain, oldest first.

        Follows `supersedes` back to the first version and `supersedes` edges forward to
        the current one, so any row of a chain gives the whole chain.
        """
        row = await self.get(row_id)
        chain = [row]
        while chain[0].supersedes and len(chain) < _MAX_HISTORY:
            older = await self.store.get_rows([chain[0].supersedes])
            if not older or older[0].row_id in {r.row_id for r in chain}:
                break
            chain.insert(0, older[0])
        while len(chain) < _MAX_HISTORY:
            current = chain[-1].row_id
            edges = await self.store.edges([current], types=["supersedes"])
            newer = [e.src for e in edges if e.dst == current]
            if not newer or newer[0] in {r.row_id for r in chain}:
                break
            chain.append(await self.get(newer[0]))
        return chain

    async def neighbors(
        self, row_id: str, *, types: Sequence[EdgeType] | None = None
    ) -> list[Neighbour]:
        """The rows linked to `row_id` in its own namespace, strongest edge first."""
        row = await self.get(row_id)
        edges = await self.store.edges([row_id], types=types)
        linked = {r.row_id: r for r in await self.store.get_rows([e.other(row_id) for e in edges])}
        found = [
            Neighbour(edge=e, row=linked[e.other(row_id)])
            for e in edges
            if e.other(row_id) in linked and linked[e.other(row_id)].namespace == row.namespace
        ]
        return sorted(found, key=lambda n: (-n.edge.weight, n.edge.edge_type, n.row.row_id))

    async def recent(
        self,
        *,
        namespace: Namespaces = None,
        limit: int = 10,
        kinds: Sequence[Kind] | None = None,
    ) -> list[Row]:
        """The newest active rows (of `kinds`, or any), newest first."""
        where = self._filter(namespace, kinds, "active", None, None, None)
        rows = await self.store.latest(where, limit=limit)
        if not rows:
            await self._require_namespaces(where)
        return rows

    async def preload(
        self,
        hint: str,
        *,
        namespace: Namespaces = None,
        budget_tokens: int = 1500,
        recent: int = 8,
        relevant: int = 12,
        now: datetime | None = None,
    ) -> ContextWindow:
        """The context a session starts with: recent, relevant and connected rows."""
        if budget_tokens < 50:
            raise InvalidInput(f"budget of {budget_tokens} tokens is too small; give at least 50")
        validate_text(hint, what="hint")
        where = self._filter(namespace, None, "active", None, None, None)
        await self._require_namespaces(where)
        return await build_window(
            self.store,
            self.embedder,
            hint,
            where,
            budget_tokens=budget_tokens,
            recent=recent,
            relevant=relevant,
            now=ensure_utc(now) if now else utc_now(),
            recipe=self.recipe,
        )

    # -- housekeeping --------------------------------------------------------------------

    async def namespaces(self, *, prefix: str | None = None) -> list[NamespaceInfo]:
        return await self.store.namespaces(prefix=prefix)

    async def stats(self) -> StoreStats:
        return await self.store.stats()

    async def export(
        self, *, namespace: Namespaces = None, status: Status | None = None
    ) -> AsyncIterator[Row]:
        """Every row (of `namespace`), oldest first."""
        where = self._filter(namespace, None, status, None, None, None)
        await self._require_namespaces(where)
        async for row in self.store.scan(where):
            yield row

    async def forget(self, namespace: str) -> ForgetReport:
        """Erase a namespace for good, for a person who asks (`forget_row` erases one row).

        For a person's namespace (`phi-users-{did}`) everything phi kept about them goes,
        in one transaction (a failure part-way erases nothing): their rows; every row in
        any namespace whose `author` is their DID or whose sources are their own records
        (`at://{did}/...`); every row derived from any of those (a public card promoted
        from their observation, through `meta["derived_from"]` or a `causal` edge); and
        their per-user block. Public records phi already published on its PDS from an
        erased row (`meta["published_uris"]`) cannot be deleted from here: the report
        lists them in `published` for the operator to delete (`phi memory forget` prints
        them).
        """
        validate_namespace(namespace)
        author: str | None = None
        state: list[tuple[str, str]] = []
        if namespace.startswith(USER_NAMESPACE_PREFIX):
            author = namespace.removeprefix(USER_NAMESPACE_PREFIX)
            state.append((BLOCK_SCOPE, f"{USER_BLOCK_PREFIX}{author}"))
        report = await self.store.forget(namespace, author=author, state=state)
        if report.state:
            report = dataclasses.replace(
                report, kinds={**report.kinds, "user block versions": report.state}
            )
        return report

    async def forget_row(
        self, row_id: str, *, confine: Callable[[str], bool] | None = None
    ) -> RowForgetReport:
        """Erase one row for good (a mistake, a secret) with what was made from it alone.

        In one transaction: the row; every row whose only sources are erased rows (a fact
        extracted from it, a summary of it alone, a card promoted from it), repeatedly; their
        edges, vectors, text entries and marks. A row it had superseded is current again
        unless another row supersedes it. `confine` (a namespace predicate, e.g. an MCP
        client's scope) makes a row outside it `RowNotFound` and keeps derived rows outside
        it. Raises `RowNotFound` for an unknown id.
        """
        return await self.store.forget_row(validate_text(row_id, what="row id"), confine=confine)

    # -- moving to another embedding model --------------------------------------------------

    async def reembed(
        self,
        to: Embedder,
        *,
        batch_size: int = 64,
        progress: Callable[[ReembedProgress], None] | None = None,
    ) -> ReembedReport:
        """Move the store to embedding model `to`: every row embedded again, the new vectors
        swapped in (and the store bound to `to`) only at the end, in one transaction.

        Resumable: an interruption leaves the store working with the old model, and running
        it again embeds only what is left. From then on this memory embeds with `to`; other
        processes must stop and reopen the store with `to` (opening it with the old model is
        refused with `EmbedderMismatch`).
        See `phi.memory.reembed`.
        """

        def switch() -> None:
            self.embedder = to

        return await reembed_rows(
            self.store,
            to,
            lock=self._write_lock,
            on_swap=switch,
            batch_size=batch_size,
            progress=progress,
        )

    # -- graph (additive block: links and walks built on `neighbors` and `store.edges`) ---

    async def link(self, src: str, dst: str, *, edge_type: EdgeType, weight: float = 1.0) -> Edge:
        """Add an edge of `edge_type` from row `src` to row `dst` (both in one namespace).

        An edge that exists already keeps the higher weight. Linking across namespaces is
        refused: a walk from one person's row must never reach another's.
        """
        if edge_type not in EDGE_TYPES:
            raise InvalidInput(
                f"unknown edge type {edge_type!r}; expected one of {', '.join(EDGE_TYPES)}"
            )
        if src == dst:
            raise InvalidInput(f"cannot link row {src!r} to itself")
        if not 0.0 < weight <= 1.0:
            raise InvalidInput(f"edge weight {weight!r} is out of range (0, 1]")
        first, second = await self.get(src), await self.get(dst)
        if first.namespace != second.namespace:
            raise InvalidInput(
                f"rows {src!r} ({first.namespace!r}) and {dst!r} ({second.namespace!r}) are in "
                "different namespaces; link rows of one namespace"
            )
        edge = Edge(src=src, dst=dst, edge_type=edge_type, weight=weight, created_at=utc_now())
        async with self._write_lock:
            await self.store.add_edges([edge])
        return edge

    async def walk(
        self,
        row_id: str,
        *,
        depth: int = 2,
        types: Sequence[EdgeType] | None = None,
        limit: int = 100,
    ) -> list[Step]:
        """The rows reachable from `row_id` in at most `depth` hops (1-3), nearest first.

        Breadth-first over `neighbors`, so a walk never leaves the row's namespace; each row
        appears once, at its shortest distance, with the edge it was reached by. Stops after
        `limit` rows (a hub row can have hundreds of semantic neighbours).
        """
        if not 1 <= depth <= MAX_WALK_DEPTH:
            raise InvalidInput(f"depth {depth} is out of range 1-{MAX_WALK_DEPTH}")
        if not 1 <= limit <= 1000:
            raise InvalidInput(f"limit {limit} is out of range 1-1000")
        seen = {row_id}
        frontier = [row_id]
        steps: list[Step] = []
        for hop in range(1, depth + 1):
            next_frontier: list[str] = []
            for current in frontier:
                for found in await self.neighbors(current, types=types):
                    if found.row.row_id in seen:
                        continue
                    seen.add(found.row.row_id)
                    steps.append(Step(depth=hop, via=current, edge=found.edge, row=found.row))
                    next_frontier.append(found.row.row_id)
                    if len(steps) >= limit:
                        return steps
            frontier = next_frontier
        return steps
