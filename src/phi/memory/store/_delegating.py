"""The store methods that only run one query of the store's SQL in one transaction,
written once for SQLite and PostgreSQL alike.

Both stores' SQL modules answer the same calls under the same names and arguments:
SQLite's as plain functions of an apsw connection (the store runs them on a worker thread),
PostgreSQL's as coroutine functions of a psycopg connection. The protocols below name those
calls, generic over the connection type, so each store hands over its modules themselves
(`QueryModules`) and mypy checks that they fit. A store also provides the transactions
(`_read_query`, `_write_query`, and `_ledger_query` where ledger writes differ), and keeps
its own method wherever it does more than run the query.

A query answers `T` (SQLite) or an awaitable of `T` (PostgreSQL). Python's types cannot
take "plain or awaitable" as a parameter of a store (that would be a type constructor), so
the protocols say `Answer[T]`, either, and each store takes the answer back to `T` with
`sync_answer` or `async_answer`, which refuse the other kind. The connection type still
keeps each store to its own modules: mypy refuses SQLite's modules in PostgreSQL's store.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Generic, Protocol, TypeAlias, TypeGuard, TypeVar

import numpy as np
import numpy.typing as npt

from phi.errors import StoreError
from phi.memory.model import Edge, EdgeType, Row, Status
from phi.memory.store.base import (
    EmbeddingSpec,
    ForgetReport,
    NamespaceInfo,
    RowFilter,
    RowForgetReport,
)
from phi.memory.store.ledger import ModelCallRecord, PassMark, StateEntry, UsageTotals

__all__ = [
    "Answer",
    "DelegatingStore",
    "QueryModules",
    "async_answer",
    "sync_answer",
]

T = TypeVar("T")
C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)

Answer: TypeAlias = T | Awaitable[T]
"""What a query function returns: `T` itself (SQLite) or an awaitable of it (PostgreSQL)."""


def sync_answer(query: Callable[[C], Answer[T]], conn: C) -> T:
    """Run `query` on `conn` where only a plain function may run (a worker thread)."""
    answer = query(conn)
    if isinstance(answer, Awaitable):
        raise TypeError(f"{query!r} answered an awaitable where a plain function was due")
    return answer


async def async_answer(query: Callable[[C], Answer[T]], conn: C) -> T:
    """Run `query` on `conn` and await its answer (a coroutine function's)."""
    answer = query(conn)
    if _awaitable(answer):
        return await answer
    raise TypeError(f"{query!r} answered a plain value where a coroutine function was due")


def _awaitable(answer: Answer[T]) -> TypeGuard[Awaitable[T]]:
    return isinstance(answer, Awaitable)


# -- what each SQL module answers ------------------------------------------------------


class RowQueries(Protocol[C_contra]):
    """Reads of rows, edges, vectors and references (`_sqlite_sql`, `_pg_sql`)."""

    def select_rows(self, conn: C_contra, row_ids: Sequence[str]) -> Answer[list[Row]]: ...

    def select_vectors(
        self, conn: C_contra, row_ids: Sequence[str]
    ) -> Answer[dict[str, npt.NDArray[np.float32]]]: ...

    def select_by_hash(
        self, conn: C_contra, keys: Sequence[tuple[str, str]]
    ) -> Answer[dict[tuple[str, str], Row]]: ...

    def select_edges(
        self, conn: C_contra, row_ids: Sequence[str], types: Sequence[EdgeType] | None
    ) -> Answer[list[Edge]]: ...

    def select_refs(
        self, conn: C_contra, row_ids: Sequence[str]
    ) -> Answer[dict[str, tuple[str, ...]]]: ...

    def latest(self, conn: C_contra, where: RowFilter, limit: int) -> Answer[list[Row]]: ...

    def ref_counts(self, conn: C_contra, refs: Sequence[str]) -> Answer[dict[str, int]]: ...

    def rows_with_ref(
        self, conn: C_contra, ref: str, where: RowFilter, limit: int
    ) -> Answer[list[str]]: ...

    def count(self, conn: C_contra, where: RowFilter) -> Answer[int]: ...

    def namespace_infos(
        self, conn: C_contra, prefix: str | None
    ) -> Answer[list[NamespaceInfo]]: ...


class WriteQueries(Protocol[C_contra]):
    """Edges and statuses (`_sqlite_sql`, `_pg_write`)."""

    def insert_edges(self, conn: C_contra, edges: Sequence[Edge]) -> Answer[None]: ...

    def set_status(
        self, conn: C_contra, row_ids: Sequence[str], status: Status, at: datetime
    ) -> Answer[None]: ...


class ForgetQueries(Protocol[C_contra]):
    """Erasing a namespace or a row with what was made from it (`_sqlite_forget`,
    `_pg_forget`)."""

    def erase(
        self,
        conn: C_contra,
        namespace: str,
        author: str | None,
        state: Sequence[tuple[str, str]],
    ) -> Answer[ForgetReport]: ...

    def erase_row(
        self, conn: C_contra, row_id: str, confine: Callable[[str], bool] | None
    ) -> Answer[RowForgetReport]: ...


class QueueQueries(Protocol[C_contra]):
    """The rows still waiting for a vector (`_sqlite_queue`, `_pg_queue`)."""

    def select_unembedded(self, conn: C_contra, limit: int) -> Answer[list[Row]]: ...

    def count_unembedded(self, conn: C_contra, where: RowFilter) -> Answer[int]: ...


class ReembedQueries(Protocol[C_contra]):
    """Moving to another embedding model (`_sqlite_reembed`, `_pg_reembed`)."""

    def stage(
        self,
        conn: C_contra,
        spec: EmbeddingSpec,
        vectors: Mapping[str, npt.NDArray[np.float32]],
    ) -> Answer[None]: ...

    def unstaged(self, conn: C_contra, spec: EmbeddingSpec, limit: int) -> Answer[list[Row]]: ...

    def count_unstaged(self, conn: C_contra, spec: EmbeddingSpec) -> Answer[int]: ...

    def swap(
        self,
        conn: C_contra,
        spec: EmbeddingSpec,
        vectors: Mapping[str, npt.NDArray[np.float32]],
    ) -> Answer[int]: ...


class LedgerQueries(Protocol[C_contra]):
    """Marks, versioned state and the model-call log (`_sqlite_learning`,
    `_pg_learning`)."""

    def insert_marks(
        self, conn: C_contra, pass_name: str, row_ids: Sequence[str], at: datetime
    ) -> Answer[None]: ...

    def select_unmarked(
        self, conn: C_contra, pass_name: str, where: RowFilter, limit: int
    ) -> Answer[list[Row]]: ...

    def select_marks(self, conn: C_contra, row_ids: Sequence[str]) -> Answer[list[PassMark]]: ...

    def select_state(self, conn: C_contra, scope: str, key: str) -> Answer[StateEntry | None]: ...

    def select_state_history(
        self, conn: C_contra, scope: str, key: str, limit: int
    ) -> Answer[list[StateEntry]]: ...

    def select_state_keys(self, conn: C_contra, scope: str) -> Answer[list[str]]: ...

    def select_state_versions(self, conn: C_contra) -> Answer[list[StateEntry]]: ...

    def insert_state(
        self, conn: C_contra, scope: str, key: str, value: str, at: datetime, keep: int
    ) -> Answer[int]: ...

    def insert_state_versions(
        self, conn: C_contra, entries: Sequence[StateEntry]
    ) -> Answer[int]: ...

    def delete_state(self, conn: C_contra, scope: str, key: str) -> Answer[int]: ...

    def insert_model_call(self, conn: C_contra, call: ModelCallRecord) -> Answer[None]: ...

    def select_usage(self, conn: C_contra) -> Answer[list[UsageTotals]]: ...

    def select_model_calls(self, conn: C_contra) -> Answer[list[ModelCallRecord]]: ...


@dataclass(frozen=True, kw_only=True)
class QueryModules(Generic[C]):
    """A store's SQL modules, by what they answer (one module may answer several)."""

    rows: RowQueries[C]
    writes: WriteQueries[C]
    forget: ForgetQueries[C]
    queue: QueueQueries[C]
    reembed: ReembedQueries[C]
    ledger: LedgerQueries[C]


# -- the methods themselves --------------------------------------------------------------


class DelegatingStore(ABC, Generic[C]):
    """The part of a `Store` that is one query in one transaction, and the embedding model
    the store holds (`_embedding`, set by the store as it connects and binds, and by
    `swap_embedding` here). `C` is the connection type the store's queries take. What
    each method promises is said once, in `RowStore` and `Ledger`."""

    _queries: QueryModules[C]
    _embedding: EmbeddingSpec | None

    @abstractmethod
    async def _read_query(self, query: Callable[[C], Answer[T]]) -> T:
        """`query` in a read transaction of its own, its answer as `T`."""

    @abstractmethod
    async def _write_query(self, query: Callable[[C], Answer[T]]) -> T:
        """`query` in a write transaction of its own, its answer as `T`."""

    async def _ledger_query(self, query: Callable[[C], Answer[T]]) -> T:
        """A write that changes only the ledger (state, the model-call log): by default a
        write like any other; a store whose row writes queue behind one lock may spare
        these the queue."""
        return await self._write_query(query)

    # -- RowStore: the embedding model ---------------------------------------------------

    async def embedding(self) -> EmbeddingSpec | None:
        return self._embedding

    def _dimension(self) -> int:
        if self._embedding is None:
            raise StoreError("no embedding model is recorded yet; bind one before writing")
        return self._embedding.dimension

    async def stage_vectors(
        self, spec: EmbeddingSpec, vectors: Mapping[str, npt.NDArray[np.float32]]
    ) -> None:
        await self._write_query(partial(self._queries.reembed.stage, spec=spec, vectors=vectors))

    async def unstaged(self, spec: EmbeddingSpec, *, limit: int) -> list[Row]:
        return await self._read_query(
            partial(self._queries.reembed.unstaged, spec=spec, limit=limit)
        )

    async def count_unstaged(self, spec: EmbeddingSpec) -> int:
        return await self._read_query(partial(self._queries.reembed.count_unstaged, spec=spec))

    async def swap_embedding(
        self, spec: EmbeddingSpec, vectors: Mapping[str, npt.NDArray[np.float32]]
    ) -> int:
        missing = await self._write_query(
            partial(self._queries.reembed.swap, spec=spec, vectors=vectors)
        )
        if missing == 0:
            self._embedding = spec
        return missing

    # -- RowStore: writes ----------------------------------------------------------------

    async def add_edges(self, edges: Sequence[Edge]) -> None:
        await self._write_query(partial(self._queries.writes.insert_edges, edges=edges))

    async def set_status(self, row_ids: Sequence[str], status: Status, *, at: datetime) -> None:
        await self._write_query(
            partial(self._queries.writes.set_status, row_ids=row_ids, status=status, at=at)
        )

    async def forget(
        self,
        namespace: str,
        *,
        author: str | None = None,
        state: Sequence[tuple[str, str]] = (),
    ) -> ForgetReport:
        return await self._write_query(
            partial(self._queries.forget.erase, namespace=namespace, author=author, state=state)
        )

    async def forget_row(
        self, row_id: str, *, confine: Callable[[str], bool] | None = None
    ) -> RowForgetReport:
        return await self._write_query(
            partial(self._queries.forget.erase_row, row_id=row_id, confine=confine)
        )

    # -- RowStore: reads -----------------------------------------------------------------

    async def get_rows(self, row_ids: Sequence[str]) -> list[Row]:
        return await self._read_query(partial(self._queries.rows.select_rows, row_ids=row_ids))

    async def get_vectors(self, row_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        return await self._read_query(partial(self._queries.rows.select_vectors, row_ids=row_ids))

    async def find_by_hash(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Row]:
        return await self._read_query(partial(self._queries.rows.select_by_hash, keys=keys))

    async def edges(
        self, row_ids: Sequence[str], *, types: Sequence[EdgeType] | None = None
    ) -> list[Edge]:
        return await self._read_query(
            partial(self._queries.rows.select_edges, row_ids=row_ids, types=types)
        )

    async def latest(self, where: RowFilter, *, limit: int) -> list[Row]:
        return await self._read_query(partial(self._queries.rows.latest, where=where, limit=limit))

    async def ref_counts(self, refs: Sequence[str]) -> dict[str, int]:
        return await self._read_query(partial(self._queries.rows.ref_counts, refs=refs))

    async def rows_with_ref(self, ref: str, where: RowFilter, *, limit: int) -> list[str]:
        return await self._read_query(
            partial(self._queries.rows.rows_with_ref, ref=ref, where=where, limit=limit)
        )

    async def count(self, where: RowFilter) -> int:
        return await self._read_query(partial(self._queries.rows.count, where=where))

    async def namespaces(self, *, prefix: str | None = None) -> list[NamespaceInfo]:
        return await self._read_query(partial(self._queries.rows.namespace_infos, prefix=prefix))

    async def refs_of(self, row_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        return await self._read_query(partial(self._queries.rows.select_refs, row_ids=row_ids))

    # -- RowStore: the embedding queue ---------------------------------------------------

    async def unembedded(self, *, limit: int) -> list[Row]:
        return await self._read_query(partial(self._queries.queue.select_unembedded, limit=limit))

    async def count_unembedded(self, where: RowFilter) -> int:
        return await self._read_query(partial(self._queries.queue.count_unembedded, where=where))

    # -- Ledger --------------------------------------------------------------------------

    async def mark(self, pass_name: str, row_ids: Sequence[str], *, at: datetime) -> None:
        await self._write_query(
            partial(self._queries.ledger.insert_marks, pass_name=pass_name, row_ids=row_ids, at=at)
        )

    async def unmarked(self, pass_name: str, where: RowFilter, *, limit: int) -> list[Row]:
        return await self._read_query(
            partial(
                self._queries.ledger.select_unmarked, pass_name=pass_name, where=where, limit=limit
            )
        )

    async def read_state(self, scope: str, key: str) -> StateEntry | None:
        return await self._read_query(
            partial(self._queries.ledger.select_state, scope=scope, key=key)
        )

    async def write_state(
        self, scope: str, key: str, value: str, *, at: datetime, keep: int = 20
    ) -> int:
        return await self._ledger_query(
            partial(
                self._queries.ledger.insert_state,
                scope=scope,
                key=key,
                value=value,
                at=at,
                keep=keep,
            )
        )

    async def state_keys(self, scope: str) -> list[str]:
        return await self._read_query(partial(self._queries.ledger.select_state_keys, scope=scope))

    async def state_history(self, scope: str, key: str, *, limit: int = 20) -> list[StateEntry]:
        return await self._read_query(
            partial(self._queries.ledger.select_state_history, scope=scope, key=key, limit=limit)
        )

    async def log_model_call(self, call: ModelCallRecord) -> None:
        await self._ledger_query(partial(self._queries.ledger.insert_model_call, call=call))

    async def model_usage(self) -> list[UsageTotals]:
        return await self._read_query(self._queries.ledger.select_usage)

    async def erase_state(self, scope: str, key: str) -> int:
        return await self._ledger_query(
            partial(self._queries.ledger.delete_state, scope=scope, key=key)
        )

    # ledger side, for copying a store (`phi.memory.transfer`):

    async def marks_of(self, row_ids: Sequence[str]) -> list[PassMark]:
        return await self._read_query(partial(self._queries.ledger.select_marks, row_ids=row_ids))

    async def state_versions(self) -> list[StateEntry]:
        return await self._read_query(self._queries.ledger.select_state_versions)

    async def restore_state(self, entries: Sequence[StateEntry]) -> int:
        return await self._ledger_query(
            partial(self._queries.ledger.insert_state_versions, entries=entries)
        )

    async def model_calls(self) -> list[ModelCallRecord]:
        return await self._read_query(self._queries.ledger.select_model_calls)
