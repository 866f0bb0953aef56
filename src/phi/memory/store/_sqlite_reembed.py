"""Moving a SQLite store to another embedding model (`EmbeddingSwap.stage_vectors` and friends).

New vectors wait in `reembed_staging`, beside the live ones, until every row has one; then
one write transaction rebuilds `row_vectors` at the new dimension from them, records the
new model and drops the staging table. Until that commit the store is exactly what it was
(searchable with the old model), and an interrupted run finds its staged vectors again.
The staging table exists only while a move is under way, so it is made here on demand
rather than by a migration; its rows go with their row (`ON DELETE CASCADE`), so `forget`
needs no change.
"""

from __future__ import annotations

from collections.abc import Mapping

import apsw
import numpy as np
import numpy.typing as npt

from phi.errors import EmbedderMoved
from phi.memory.model import Row
from phi.memory.store import _sqlite_sql as sql
from phi.memory.store._sqlite_schema import create_vector_table
from phi.memory.store.base import EmbeddingSpec

__all__ = ["count_unstaged", "moved", "stage", "swap", "unstaged"]

_STAGING = "reembed_staging"


def _exists(conn: apsw.Connection) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (_STAGING,)
    )
    return found.fetchone() is not None


def moved(conn: apsw.Connection, held: EmbeddingSpec | None) -> EmbedderMoved | None:
    """The error for a handle that believes the store is bound to `held` while it records
    another model (a swap committed through another connection since this one read it),
    else `None`. Two primary-key reads: cheap enough for every vector write, whose
    transaction it runs in (the write lock held, so no swap can land after it)."""
    if held is None:
        return None
    found = dict(
        conn.execute(
            "SELECT key, value FROM phi_meta WHERE key IN ('embedding_model', 'embedding_dim')"
        )
    )
    model, dimension = found.get("embedding_model"), int(found.get("embedding_dim", 0))
    if (model, dimension) == (held.model, held.dimension):
        return None
    return EmbedderMoved(
        stored=str(model), stored_dim=dimension, given=held.model, given_dim=held.dimension
    )


def stage(
    conn: apsw.Connection, spec: EmbeddingSpec, vectors: Mapping[str, npt.NDArray[np.float32]]
) -> None:
    """Keep `vectors` for a move to `spec`; vectors staged for another model go first."""
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {_STAGING} ("
        " id INTEGER PRIMARY KEY REFERENCES rows (id) ON DELETE CASCADE,"
        " model TEXT NOT NULL, dim INTEGER NOT NULL, embedding BLOB NOT NULL)"
    )
    conn.execute(
        f"DELETE FROM {_STAGING} WHERE model != ? OR dim != ?", (spec.model, spec.dimension)
    )
    # A row erased since it was read is simply not staged.
    ids = sql.internal_ids(conn, list(vectors))
    conn.executemany(
        f"INSERT OR REPLACE INTO {_STAGING} (id, model, dim, embedding) VALUES (?,?,?,?)",
        [
            (rid, spec.model, spec.dimension, vectors[row_id].astype(np.float32).tobytes())
            for row_id, rid in ids.items()
        ],
    )


def _missing_sql(spec: EmbeddingSpec, staged: bool) -> tuple[str, tuple[object, ...]]:
    if not staged:
        return "", ()
    return (
        f" WHERE NOT EXISTS (SELECT 1 FROM {_STAGING} s"
        " WHERE s.id = r.id AND s.model = ? AND s.dim = ?)",
        (spec.model, spec.dimension),
    )


def unstaged(conn: apsw.Connection, spec: EmbeddingSpec, limit: int) -> list[Row]:
    """Rows with no vector staged for `spec`, in insertion order."""
    cond, params = _missing_sql(spec, _exists(conn))
    query = f"SELECT {sql.ROW_COLUMNS} FROM rows r{cond} ORDER BY r.id LIMIT ?"
    return list(map(sql.row_from, conn.execute(query, (*params, limit))))


def count_unstaged(conn: apsw.Connection, spec: EmbeddingSpec) -> int:
    cond, params = _missing_sql(spec, _exists(conn))
    found = conn.execute(f"SELECT count(*) FROM rows r{cond}", params).fetchone()
    assert found is not None  # count(*) always answers one row
    return int(found[0])


def swap(
    conn: apsw.Connection, spec: EmbeddingSpec, vectors: Mapping[str, npt.NDArray[np.float32]]
) -> int:
    """Stage `vectors`; then, if every row has a staged vector, make them the live ones and
    bind `spec`. Returns how many rows still lack one (0: the store moved)."""
    stage(conn, spec, vectors)
    missing = count_unstaged(conn, spec)
    if missing:
        return missing
    # vec0 fixes its dimension at creation: the table is rebuilt, not updated.
    conn.execute("DROP TABLE IF EXISTS row_vectors")
    create_vector_table(conn, spec.dimension)
    conn.execute(
        "INSERT INTO row_vectors (id, namespace, embedding, kind, status, author, created_at)"
        f" SELECT r.id, r.namespace, s.embedding, r.kind, r.status, coalesce(r.author, ''),"
        f" r.created_at FROM rows r JOIN {_STAGING} s ON s.id = r.id"
    )
    # Every row has its vector now, queued ones included: none waits any longer.
    conn.execute("DELETE FROM embed_queue")
    conn.executemany(
        "INSERT INTO phi_meta (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("embedding_model", spec.model), ("embedding_dim", str(spec.dimension))],
    )
    conn.execute(f"DROP TABLE {_STAGING}")
    return 0
