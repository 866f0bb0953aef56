"""One hybrid recall on the PostgreSQL store: every step of `gather_stepwise` on one
connection in one read transaction (one pool checkout, one consistent snapshot)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from phi.memory.store import _pg_sql as sql
from phi.memory.store._pg_schema import Conn
from phi.memory.store.base import Hit, HybridQuery, HybridSignals

__all__ = ["hybrid"]


def _merge(hits: list[Hit], scores: Mapping[str, float]) -> list[Hit]:
    known = {h.row_id for h in hits}
    return hits + [Hit(row_id=i, score=v) for i, v in scores.items() if i not in known]


async def hybrid(
    conn: Conn, query: HybridQuery, vector: str, tokens: Sequence[str]
) -> HybridSignals:
    """`Store.hybrid`, answering exactly as `gather_stepwise` does."""
    dense = await sql.knn(conn, vector, query.where, query.candidates)
    text = await sql.bm25(conn, tokens, query.where, limit=query.candidates)
    from_dense, from_text = frozenset(h.row_id for h in dense), frozenset(h.row_id for h in text)
    adjacency: dict[str, set[str]] = {}
    explored: set[str] = set()
    frontier = set(query.seeds(dense, text)) if query.graph_types else set()
    for _ in range(query.hops):
        if not frontier:
            break
        for edge in await sql.select_edges(conn, sorted(frontier), query.graph_types):
            adjacency.setdefault(edge.src, set()).add(edge.dst)
            adjacency.setdefault(edge.dst, set()).add(edge.src)
        explored |= frontier
        frontier = set(adjacency) - explored
    extra = sorted(set(adjacency) - from_dense - from_text)
    if extra:
        dense = _merge(dense, await sql.cosine_of(conn, vector, extra))
        found = await sql.bm25(conn, tokens, query.where, limit=None, row_ids=extra)
        text = _merge(text, {h.row_id: h.score for h in found})
    hits = list(dict.fromkeys(h.row_id for h in [*dense, *text]))
    return HybridSignals(
        dense=dense,
        text=text,
        from_dense=from_dense,
        from_text=from_text,
        adjacency={k: sorted(v) for k, v in adjacency.items()},
        contents={r.row_id: r.content for r in await sql.select_rows(conn, hits)},
    )
