"""One hybrid recall on the PostgreSQL store: every step of `gather_stepwise` on one
connection in one read transaction (one pool checkout, one consistent snapshot)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from phi.memory.model import Edge, EdgeType, Row
from phi.memory.store import _pg_queue as queue_sql
from phi.memory.store import _pg_sql as sql
from phi.memory.store._pg_schema import Conn
from phi.memory.store.base import Hit, HybridQuery, HybridSignals, RowFilter, gather_stepwise

__all__ = ["hybrid"]


@dataclass(frozen=True, kw_only=True)
class _OnConnection:
    """`HybridSteps` on one connection. The query's vector and terms arrive already in
    PostgreSQL's form (`vector` text, FTS5 tokens): the steps use those, not their own
    arguments, which are the same query's."""

    conn: Conn
    vector: str
    tokens: Sequence[str]

    async def vector_search(
        self, vector: npt.NDArray[np.float32], where: RowFilter, *, limit: int
    ) -> list[Hit]:
        return await sql.knn(self.conn, self.vector, where, limit)

    async def text_search(self, terms: Sequence[str], where: RowFilter, *, limit: int) -> list[Hit]:
        return await sql.bm25(self.conn, self.tokens, where, limit=limit)

    async def edges(
        self, row_ids: Sequence[str], *, types: Sequence[EdgeType] | None = None
    ) -> list[Edge]:
        return await sql.select_edges(self.conn, row_ids, types)

    async def vector_scores(
        self, vector: npt.NDArray[np.float32], row_ids: Sequence[str]
    ) -> dict[str, float]:
        return await sql.cosine_of(self.conn, self.vector, row_ids)

    async def text_scores(
        self, terms: Sequence[str], row_ids: Sequence[str], where: RowFilter
    ) -> dict[str, float]:
        found = await sql.bm25(self.conn, self.tokens, where, limit=None, row_ids=row_ids)
        return {h.row_id: h.score for h in found}

    async def get_rows(self, row_ids: Sequence[str]) -> list[Row]:
        return await sql.select_rows(self.conn, row_ids)

    async def count_unembedded(self, where: RowFilter) -> int:
        return await queue_sql.count_unembedded(self.conn, where)


async def hybrid(
    conn: Conn, query: HybridQuery, vector: str, tokens: Sequence[str]
) -> HybridSignals:
    """`Store.hybrid`: `gather_stepwise` with its steps on `conn`."""
    return await gather_stepwise(_OnConnection(conn=conn, vector=vector, tokens=tokens), query)
