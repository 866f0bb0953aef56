"""The SQLite store's embedding queue: rows written without a vector (`embed_queue`).

A queued row is in `rows`, `row_text` and `row_terms` (text recall sees it at once) but
not in `row_vectors` until `insert_vectors` gives it one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import apsw
import numpy as np
import numpy.typing as npt

from phi.errors import StoreError
from phi.memory.model import Edge, Row
from phi.memory.store import _sqlite_sql as sql
from phi.memory.store.base import RowFilter

__all__ = ["count_unembedded", "insert_vectors", "select_unembedded"]


def select_unembedded(conn: apsw.Connection, limit: int) -> list[Row]:
    query = (
        f"SELECT {sql.ROW_COLUMNS} FROM embed_queue q JOIN rows r ON r.id = q.id"
        " ORDER BY q.id LIMIT ?"
    )
    return list(map(sql.row_from, conn.execute(query, (limit,))))


def count_unembedded(conn: apsw.Connection, where: RowFilter) -> int:
    """Queued rows `where` admits, read from the queue outwards (`CROSS JOIN` fixes the
    order): the cost follows the queue's rows in scope, found by its namespace index, never
    the rows of the scope, so it is nothing when the queue is empty. Left to itself the
    planner walked a namespace's rows and probed the queue for each."""
    cond, params = sql.where_sql(where)
    scope: list[str] = []
    if where.namespaces is not None:
        cond = f"q.namespace IN ({sql.marks(where.namespaces)}) AND {cond}"
        scope = list(where.namespaces)
    query = f"SELECT count(*) FROM embed_queue q CROSS JOIN rows r ON r.id = q.id WHERE {cond}"
    return int(next(conn.execute(query, [*scope, *params]))[0])


def insert_vectors(
    conn: apsw.Connection,
    vectors: Mapping[str, npt.NDArray[np.float32]],
    edges: Sequence[Edge],
    dimension: int,
) -> None:
    """Vectors of queued rows (each leaves the queue), then the edges between rows that
    still exist: a row erased since it was read from the queue is skipped."""
    for row_id, vector in vectors.items():
        if vector.shape != (dimension,):
            raise StoreError(
                f"vector of shape {vector.shape} for row {row_id!r} does not fit this store"
                f" ({dimension}-d)"
            )
    ids = sql.internal_ids(conn, [*vectors, *(e.src for e in edges), *(e.dst for e in edges)])
    for row_id, vector in vectors.items():
        rid = ids.get(row_id)
        if rid is None:
            continue
        conn.execute("DELETE FROM embed_queue WHERE id = ?", (rid,))
        if conn.changes() == 0:
            continue  # not queued: it has its vector already
        if next(conn.execute("SELECT count(*) FROM row_vectors WHERE id = ?", (rid,)))[0]:
            continue  # given one meanwhile by another path (a re-embedding): keep it
        conn.execute(
            "INSERT INTO row_vectors (id, namespace, embedding, kind, status, author, created_at)"
            " SELECT id, namespace, ?, kind, status, coalesce(author, ''), created_at"
            " FROM rows WHERE id = ?",
            (vector.astype(np.float32).tobytes(), rid),
        )
    sql.insert_edges(conn, [e for e in edges if e.src in ids and e.dst in ids])
