"""One hybrid recall on the PostgreSQL store: every step of `gather_stepwise` on one
connection, in four round trips where the steps one by one took ten.

Each round trip to the server costs a wake-up of its backend and of this process; on a
machine whose cores are busy that wait, not the SQL, was most of a search. So the
independent reads go out together in one pipeline (`psycopg`'s pipeline mode):
- with the dense step: the scope's size, the exact nearest rows (guarded in SQL, so a
  wide scope reads no vector and goes to the HNSW index in one more trip), the text step
  (same filter and limit, as `gather_stepwise` asks) and whether any row waits for its
  vector;
- with the cosines of the rows the graph reached: their text scores, and the rows of
  every candidate (`get_rows` asks for those).
Each step still answers exactly what its own statement would; a step asked for something
else than what was read ahead runs its own statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from phi.memory.model import Edge, EdgeType, Row
from phi.memory.store import _pg_queue as queue_sql
from phi.memory.store import _pg_sql as sql
from phi.memory.store._pg_schema import Conn
from phi.memory.store.base import Hit, HybridQuery, HybridSignals, RowFilter, gather_stepwise

__all__ = ["hybrid"]


@dataclass(kw_only=True)
class _OnConnection:
    """`HybridSteps` on one connection. The query's vector and terms arrive already in
    PostgreSQL's form (`vector` text, FTS5 tokens): the steps use those, not their own
    arguments, which are the same query's. `where` is the query's filter, the one the
    text scores are read ahead under."""

    conn: Conn
    vector: str
    tokens: Sequence[str]
    where: RowFilter
    _text: dict[tuple[RowFilter, int], list[Hit]] = field(default_factory=dict)
    """Text hits read ahead with the dense step, by filter and limit."""
    _text_scores: dict[frozenset[str], dict[str, float]] = field(default_factory=dict)
    """Text scores under `where` read ahead with the cosines, by the ids asked."""
    _rows: dict[str, Row] = field(default_factory=dict)
    _rows_asked: frozenset[str] = frozenset()
    """Rows read ahead with the cosines, and the ids they were read for."""
    _waiting: bool | None = None
    """Whether any row waited for its vector (read with the dense step)."""
    _seen: set[str] = field(default_factory=set)
    """Row ids of the dense and text hits so far: candidates `get_rows` will ask for."""

    async def vector_search(
        self, vector: npt.NDArray[np.float32], where: RowFilter, *, limit: int
    ) -> list[Hit]:
        count, count_params = sql.scope_sql(where)
        text = bool(self.tokens) and limit > 0
        async with self.conn.pipeline():
            scope_cur = await self.conn.execute(count, count_params)
            exact_cur = await self.conn.execute(
                *sql.exact_sql(where, limit, self.vector, guarded=True)
            )
            text_cur = (
                await self.conn.execute(*sql.bm25_sql(self.tokens, where, limit=limit))
                if text
                else None
            )
            queue_cur = await self.conn.execute("SELECT EXISTS (SELECT 1 FROM embed_queue)")
            (scope,) = await scope_cur.fetchone() or (0,)
            exact = sql.hits_from(await exact_cur.fetchall())
            self._text[where, limit] = (
                sql.hits_from(await text_cur.fetchall()) if text_cur is not None else []
            )
            (waiting,) = await queue_cur.fetchone() or (False,)
            self._waiting = bool(waiting)
        if scope > sql.EXACT_MAX:
            exact = await sql.knn_indexed(self.conn, self.vector, where, limit)
        self._seen |= {h.row_id for h in exact}
        return exact

    async def text_search(self, terms: Sequence[str], where: RowFilter, *, limit: int) -> list[Hit]:
        found = self._text.pop((where, limit), None)
        if found is None:
            found = await sql.bm25(self.conn, self.tokens, where, limit=limit)
        self._seen |= {h.row_id for h in found}
        return found

    async def edges(
        self, row_ids: Sequence[str], *, types: Sequence[EdgeType] | None = None
    ) -> list[Edge]:
        return await sql.select_edges(self.conn, row_ids, types)

    async def vector_scores(
        self, vector: npt.NDArray[np.float32], row_ids: Sequence[str]
    ) -> dict[str, float]:
        """The cosines of `row_ids` (rows the graph reached), read with their text scores
        under `where` and the rows of every candidate so far, in one round trip."""
        ids = list(set(row_ids))
        asked = frozenset(self._seen | set(ids))
        async with self.conn.pipeline():
            cos_cur = await self.conn.execute(sql.COSINE_SQL, (self.vector, ids))
            text_cur = (
                await self.conn.execute(
                    *sql.bm25_sql(self.tokens, self.where, limit=None, row_ids=ids)
                )
                if self.tokens
                else None
            )
            rows_cur = await self.conn.execute(sql.SELECT_ROWS_SQL, (list(asked),))
            scores = {i: float(s) for i, s in await cos_cur.fetchall()}
            found = sql.hits_from(await text_cur.fetchall()) if text_cur is not None else []
            self._text_scores[frozenset(ids)] = {h.row_id: h.score for h in found}
            self._rows = {row.row_id: row for row in map(sql.row_from, await rows_cur.fetchall())}
            self._rows_asked = asked
        return scores

    async def text_scores(
        self, terms: Sequence[str], row_ids: Sequence[str], where: RowFilter
    ) -> dict[str, float]:
        read = self._text_scores.pop(frozenset(row_ids), None) if where == self.where else None
        if read is not None:
            return read
        hits = await sql.bm25(self.conn, self.tokens, where, limit=None, row_ids=row_ids)
        return {h.row_id: h.score for h in hits}

    async def get_rows(self, row_ids: Sequence[str]) -> list[Row]:
        if set(row_ids) <= self._rows_asked:
            return [self._rows[i] for i in row_ids if i in self._rows]
        return await sql.select_rows(self.conn, row_ids)

    async def count_unembedded(self, where: RowFilter) -> int:
        if self._waiting is False:
            return 0
        return await queue_sql.count_unembedded(self.conn, where)


async def hybrid(
    conn: Conn, query: HybridQuery, vector: str, tokens: Sequence[str]
) -> HybridSignals:
    """`Store.hybrid`: `gather_stepwise` with its steps on `conn`."""
    steps = _OnConnection(conn=conn, vector=vector, tokens=tokens, where=query.where)
    return await gather_stepwise(steps, query)
