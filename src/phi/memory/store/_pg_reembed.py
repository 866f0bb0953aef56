"""Moving a PostgreSQL store to another embedding model (`EmbeddingSwap.stage_vectors` and
friends).

New vectors wait in `reembed_staging` (an unconstrained `vector` column, since the new
dimension differs) beside the live ones until every row has one; then one write
transaction rebuilds `row_vectors` at the new dimension from them, rebuilds its HNSW index,
records the new model and drops the staging table. Until that commit the store is what it
was, and an interrupted run finds its staged vectors again. The table exists only while a
move is under way, so it is made here on demand rather than by a migration; its rows go
with their row (`ON DELETE CASCADE`), so `forget` needs no change.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from phi.errors import EmbedderMoved
from phi.memory.model import Row
from phi.memory.store import _pg_sql as sql
from phi.memory.store._pg_schema import Conn, create_vector_table
from phi.memory.store.base import EmbeddingSpec

__all__ = ["count_unstaged", "moved", "stage", "swap", "unstaged"]

_STAGING = "reembed_staging"


async def _exists(conn: Conn) -> bool:
    cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (_STAGING,))
    found = await cur.fetchone()
    return bool(found and found[0])


async def moved(conn: Conn, held: EmbeddingSpec | None) -> EmbedderMoved | None:
    """The error for a handle that believes the store is bound to `held` while it records
    another model (a swap committed by another process since this one read it), else
    `None`. One primary-key read: cheap enough for every vector write, whose transaction
    it runs in after the write lock (a swap takes that lock too, so none lands after it)."""
    if held is None:
        return None
    cur = await conn.execute(
        "SELECT key, value FROM phi_meta WHERE key IN ('embedding_model', 'embedding_dim')"
    )
    found: dict[str, str] = dict(await cur.fetchall())
    model, dimension = found.get("embedding_model"), int(found.get("embedding_dim", 0))
    if (model, dimension) == (held.model, held.dimension):
        return None
    return EmbedderMoved(
        stored=str(model), stored_dim=dimension, given=held.model, given_dim=held.dimension
    )


async def stage(
    conn: Conn, spec: EmbeddingSpec, vectors: Mapping[str, npt.NDArray[np.float32]]
) -> None:
    """Keep `vectors` for a move to `spec`; vectors staged for another model go first."""
    await conn.execute(
        f"CREATE TABLE IF NOT EXISTS {_STAGING} ("
        " id bigint PRIMARY KEY REFERENCES rows (id) ON DELETE CASCADE,"
        " model text NOT NULL, dim integer NOT NULL, embedding vector NOT NULL)"
    )
    await conn.execute(
        f"DELETE FROM {_STAGING} WHERE model <> %s OR dim <> %s", (spec.model, spec.dimension)
    )
    # A row erased since it was read is simply not staged.
    ids = await sql.internal_ids(conn, list(vectors))
    if not ids:
        return
    await conn.execute(
        f"INSERT INTO {_STAGING} (id, model, dim, embedding)"
        " SELECT i, %s, %s, v::vector FROM unnest(%s::bigint[], %s::text[]) AS u(i, v)"
        " ON CONFLICT (id) DO UPDATE SET model = excluded.model, dim = excluded.dim,"
        " embedding = excluded.embedding",
        (
            spec.model,
            spec.dimension,
            list(ids.values()),
            [sql.vector_literal(vectors[row_id]) for row_id in ids],
        ),
    )


def _missing_sql(staged: bool) -> str:
    if not staged:
        return ""
    return (
        f" WHERE NOT EXISTS (SELECT 1 FROM {_STAGING} s"
        " WHERE s.id = r.id AND s.model = %(model)s AND s.dim = %(dim)s)"
    )


async def unstaged(conn: Conn, spec: EmbeddingSpec, limit: int) -> list[Row]:
    """Rows with no vector staged for `spec`, in insertion order."""
    cond = _missing_sql(await _exists(conn))
    cur = await conn.execute(
        f"SELECT {sql.ROW_COLUMNS} FROM rows r{cond} ORDER BY r.id LIMIT %(limit)s",
        {"model": spec.model, "dim": spec.dimension, "limit": limit},
    )
    return list(map(sql.row_from, await cur.fetchall()))


async def count_unstaged(conn: Conn, spec: EmbeddingSpec) -> int:
    cond = _missing_sql(await _exists(conn))
    cur = await conn.execute(
        f"SELECT count(*) FROM rows r{cond}", {"model": spec.model, "dim": spec.dimension}
    )
    found = await cur.fetchone()
    return int(found[0]) if found else 0


async def swap(
    conn: Conn, spec: EmbeddingSpec, vectors: Mapping[str, npt.NDArray[np.float32]]
) -> int:
    """Stage `vectors`; then, if every row has a staged vector, make them the live ones and
    bind `spec`. Returns how many rows still lack one (0: the store moved)."""
    await stage(conn, spec, vectors)
    missing = await count_unstaged(conn, spec)
    if missing:
        return missing
    # The column's type fixes the dimension: the table is rebuilt, and its index built
    # once over the full table (faster than growing it row by row).
    await conn.execute("DROP TABLE IF EXISTS row_vectors")
    await conn.execute(
        "CREATE TABLE row_vectors ("
        " id bigint PRIMARY KEY REFERENCES rows (id) ON DELETE CASCADE,"
        f" embedding vector({int(spec.dimension)}) NOT NULL)"
    )
    await conn.execute(
        f"INSERT INTO row_vectors (id, embedding) SELECT id, embedding FROM {_STAGING}"
    )
    await create_vector_table(conn, spec.dimension)
    # Every row has its vector now, queued ones included: none waits any longer.
    await conn.execute("DELETE FROM embed_queue")
    await conn.execute(
        "INSERT INTO phi_meta (key, value) VALUES ('embedding_model', %s), ('embedding_dim', %s)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (spec.model, str(spec.dimension)),
    )
    await conn.execute(f"DROP TABLE {_STAGING}")
    return 0
