"""The PostgreSQL store's embedding queue (`embed_queue`, migration 3): rows written without
a vector wait there, with their namespace, until `insert_vectors` gives them one.

A queued row is in `rows` and `row_terms` (text recall sees it at once) but not in
`row_vectors`. The queue is small beside the store, so reading and counting it cost
little at any size of store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from phi.errors import StoreError
from phi.memory.model import Edge, Row
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_sql import ROW_COLUMNS, internal_ids, row_from, vector_literal, where_sql
from phi.memory.store._pg_write import bound_fresh, graph_exists, insert_edges
from phi.memory.store.base import RowFilter

__all__ = ["count_unembedded", "insert_vectors", "select_unembedded"]


async def select_unembedded(conn: Conn, limit: int) -> list[Row]:
    cur = await conn.execute(
        f"SELECT {ROW_COLUMNS} FROM embed_queue q JOIN rows r ON r.id = q.id"
        " ORDER BY q.id LIMIT %(limit)s",
        {"limit": limit},
    )
    return [row_from(values) for values in await cur.fetchall()]


async def count_unembedded(conn: Conn, where: RowFilter) -> int:
    """Queued rows `where` admits. An empty queue (the usual case) answers from a statement
    without parameters, planned once; otherwise the queue's rows in scope are found by its
    namespace index and each looked up in `rows` by key. `OFFSET 0` keeps the planner from
    walking the scope's rows and probing the queue instead, as it chose while the queue's
    statistics said it was empty."""
    cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM embed_queue)")
    (waiting,) = await cur.fetchone() or (False,)
    if not waiting:
        return 0
    cond, params = where_sql(where)
    scope = "q.namespace = ANY(%(w_namespace)s)" if where.namespaces is not None else "true"
    cur = await conn.execute(
        "SELECT count(*) FROM embed_queue q CROSS JOIN LATERAL"
        f" (SELECT 1 FROM rows r WHERE r.id = q.id AND {cond} OFFSET 0) AS admitted"
        f" WHERE {scope}",
        params,
    )
    (n,) = await cur.fetchone() or (0,)
    return int(n)


async def insert_vectors(
    conn: Conn,
    vectors: Mapping[str, npt.NDArray[np.float32]],
    edges: Sequence[Edge],
    dimension: int,
) -> None:
    for row_id, vector in vectors.items():
        if vector.shape != (dimension,):
            raise StoreError(
                f"vector of shape {vector.shape} for row {row_id!r} does not fit this store"
                f" ({dimension}-d)"
            )
    ids = await internal_ids(conn, [*vectors, *(e.src for e in edges), *(e.dst for e in edges)])
    present = [(ids[i], v) for i, v in vectors.items() if i in ids]
    fresh = await graph_exists(conn)
    await conn.execute(
        "INSERT INTO row_vectors (id, namespace, embedding, fresh)"
        " SELECT u.i, r.namespace, u.v::vector, %s FROM unnest(%s::bigint[], %s::text[])"
        " AS u(i, v) JOIN rows r ON r.id = u.i ON CONFLICT (id) DO NOTHING",
        (fresh, [rid for rid, _ in present], [vector_literal(v) for _, v in present]),
    )
    if fresh:
        await bound_fresh(conn, len(present))
    await conn.execute("DELETE FROM embed_queue WHERE id = ANY(%s)", ([rid for rid, _ in present],))
    await insert_edges(conn, [e for e in edges if e.src in ids and e.dst in ids], ids)
