"""The write SQL of the PostgreSQL store: the identity upsert with its vectors, postings,
statistics and references; edges; supersession (`forget` is in `_pg_forget`). Each runs
inside the write transaction `PostgresStore` opens (after `lock_writes`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

import numpy as np
from psycopg.types.json import Jsonb

from phi.errors import RowNotFound, StoreError
from phi.memory.model import Edge, Row, Status
from phi.memory.store._pg_copy import copy_postings, copy_vectors
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_sql import ROW_COLUMNS, internal_ids, row_from
from phi.memory.store._pg_text import Tokenizer
from phi.memory.store.base import RowWrite

FRESH_MAX: Final = 5_000
"""Most vectors kept out of the HNSW graph (`fresh`) before writes put their own in.

Inserting a vector into pgvector's HNSW graph searches the graph for its neighbours: at
100k rows on 2 busy cores it took 17 ms of a write's 17.4 ms per vector (without the
graph 0.4 ms). A write stores its vectors `fresh` instead, outside the graph: scoped
searches never use the graph (their scopes are searched exactly), and a wide search adds
the fresh vectors it admits, searched exactly, to the graph's answer (`_pg_sql.knn_indexed`).
`settle` puts fresh vectors into the graph outside the write lock (a maintenance task:
`phi memory settle`, `phi.memory.upkeep.settle`). Where nothing settles, a write
that finds more than `FRESH_MAX` fresh vectors settles as many as it adds (the cost of
the graph comes back to the write path, and the fresh set stays bounded: a wide search
scans at most this many vectors exactly)."""


async def graph_exists(conn: Conn) -> bool:
    """Whether the HNSW index exists (not during a bulk load, which builds it at the end
    over every vector: none is fresh then)."""
    cur = await conn.execute("SELECT to_regclass('row_vectors_hnsw') IS NOT NULL")
    (found,) = await cur.fetchone() or (False,)
    return bool(found)


async def settle(conn: Conn, limit: int) -> int:
    """Put up to `limit` fresh vectors (oldest first) into the HNSW graph; return how many.
    Needs no write lock: concurrent settlers skip each other's vectors."""
    cur = await conn.execute(
        "UPDATE row_vectors SET fresh = false WHERE id IN (SELECT id FROM row_vectors"
        " WHERE fresh ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED)",
        (limit,),
    )
    return max(cur.rowcount, 0)


async def bound_fresh(conn: Conn, added: int) -> None:
    """Keep at most about `FRESH_MAX` vectors fresh (see there)."""
    cur = await conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM row_vectors WHERE fresh LIMIT {FRESH_MAX + 1}) f"
    )
    (fresh,) = await cur.fetchone() or (0,)
    if fresh > FRESH_MAX:
        await settle(conn, added)


async def lock_writes(conn: Conn) -> None:
    """Take the store's write lock for this transaction (the text statistics row)."""
    await conn.execute("SELECT 1 FROM text_stats FOR UPDATE")


async def upsert_rows(
    conn: Conn, items: Sequence[RowWrite], dimension: int, tokenizer: Tokenizer
) -> list[tuple[Row, int]]:
    """Insert rows with their vectors, postings and references, a statement per table for
    the whole batch; a row whose `(namespace, content_hash)` is already stored (or earlier
    in the batch) is not inserted: its stored row and internal id come back instead."""
    for item in items:
        if item.vector is not None and item.vector.shape != (dimension,):
            raise StoreError(
                f"vector of shape {item.vector.shape} does not fit this store ({dimension}-d)"
            )
    if not items:
        return []
    rows = [item.row for item in items]
    postings = [tokenizer.postings(row.content) for row in rows]
    threads = [row.meta.get("thread") for row in rows]
    cur = await conn.execute(
        "INSERT INTO rows (row_id, namespace, kind, content, content_hash, status, supersedes,"
        " trust, tags, source_uris, author, thread, created_at, updated_at, meta, doc_len,"
        " written_by)"
        " SELECT u.row_id, u.namespace, u.kind, u.content, u.content_hash, u.status,"
        " u.supersedes, u.trust, ARRAY(SELECT jsonb_array_elements_text(u.tags)),"
        " ARRAY(SELECT jsonb_array_elements_text(u.sources)), u.author, u.thread,"
        " u.created_at, u.updated_at, u.meta, u.doc_len, u.written_by FROM unnest("
        "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],"
        " %s::text[], %s::jsonb[], %s::jsonb[], %s::text[], %s::text[], %s::timestamptz[],"
        " %s::timestamptz[], %s::jsonb[], %s::int[], %s::text[]) WITH ORDINALITY AS"
        " u(row_id, namespace, kind, content, content_hash, status, supersedes, trust, tags,"
        " sources, author, thread, created_at, updated_at, meta, doc_len, written_by, n)"
        " ORDER BY u.n"
        " ON CONFLICT (namespace, content_hash) DO NOTHING RETURNING row_id, id",
        (
            [r.row_id for r in rows],
            [r.namespace for r in rows],
            [r.kind for r in rows],
            [r.content for r in rows],
            [r.content_hash for r in rows],
            [r.status for r in rows],
            [r.supersedes for r in rows],
            [r.trust for r in rows],
            [Jsonb(list(r.tags)) for r in rows],
            [Jsonb(list(r.source_uris)) for r in rows],
            [r.author for r in rows],
            [t if isinstance(t, str) else None for t in threads],
            [r.created_at for r in rows],
            [r.updated_at for r in rows],
            [Jsonb(dict(r.meta)) for r in rows],
            [length for _, length in postings],
            [r.written_by for r in rows],
        ),
    )
    inserted = {row_id: int(rid) for row_id, rid in await cur.fetchall()}
    new = [i for i, row in enumerate(rows) if row.row_id in inserted]
    if new:
        await _index_new(conn, [items[i] for i in new], [postings[i] for i in new], inserted)
        await _enqueue(conn, [items[i] for i in new], inserted)
    others = [(row.namespace, row.content_hash) for row in rows if row.row_id not in inserted]
    stored: dict[tuple[str, str], tuple[Row, int]] = {}
    if others:
        cur = await conn.execute(
            f"SELECT {ROW_COLUMNS}, r.id FROM rows r"
            " JOIN unnest(%s::text[], %s::text[]) AS k(ns, h)"
            " ON r.namespace = k.ns AND r.content_hash = k.h",
            ([n for n, _ in others], [h for _, h in others]),
        )
        for values in await cur.fetchall():
            row = row_from(values[:-1])
            stored[row.namespace, row.content_hash] = (row, int(values[-1]))
    return [
        (row, inserted[row.row_id])
        if row.row_id in inserted
        else stored[row.namespace, row.content_hash]
        for row in rows
    ]


async def _index_new(
    conn: Conn,
    items: Sequence[RowWrite],
    row_postings: Sequence[tuple[Counter[str], int]],
    ids: dict[str, int],
) -> None:
    """Vectors, postings, statistics and references of freshly inserted rows."""
    rids = [ids[item.row.row_id] for item in items]
    # A row without a vector waits for `add_vectors` (`_pg_queue`): no row_vectors entry.
    embedded = [(rid, i) for rid, i in zip(rids, items, strict=True) if i.vector is not None]
    if embedded:
        fresh = await graph_exists(conn)
        await copy_vectors(
            conn,
            [rid for rid, _ in embedded],
            [item.row.namespace for _, item in embedded],
            np.stack([item.vector for _, item in embedded if item.vector is not None]),
            fresh=fresh,
        )
        if fresh:
            await bound_fresh(conn, len(embedded))
    postings: list[tuple[str, str, int, int]] = []
    df: Counter[str] = Counter()
    for item, rid, (counts, _) in zip(items, rids, row_postings, strict=True):
        postings.extend((term, item.row.namespace, rid, tf) for term, tf in counts.items())
        df.update(counts.keys())
    if postings:
        await copy_postings(conn, postings)
        ordered = sorted(df)
        await conn.execute(
            "INSERT INTO term_df (term, df)"
            " SELECT * FROM unnest(%s::text[], %s::bigint[])"
            " ON CONFLICT (term) DO UPDATE SET df = term_df.df + excluded.df",
            (ordered, [df[t] for t in ordered]),
        )
    await conn.execute(
        "UPDATE text_stats SET n_rows = n_rows + %s, total_len = total_len + %s",
        (len(items), sum(length for _, length in row_postings)),
    )
    refs = [(ref, rid) for item, rid in zip(items, rids, strict=True) for ref in set(item.refs)]
    if refs:
        await conn.execute(
            "INSERT INTO row_refs (ref, id) SELECT * FROM unnest(%s::text[], %s::bigint[])"
            " ON CONFLICT DO NOTHING",
            ([r for r, _ in refs], [i for _, i in refs]),
        )


async def _enqueue(conn: Conn, items: Sequence[RowWrite], ids: dict[str, int]) -> None:
    """Queue the freshly inserted rows that came without a vector (`_pg_queue`)."""
    waiting = [item.row for item in items if item.vector is None]
    if waiting:
        await conn.execute(
            "INSERT INTO embed_queue (id, namespace, queued_at)"
            " SELECT * FROM unnest(%s::bigint[], %s::text[], %s::timestamptz[])",
            (
                [ids[r.row_id] for r in waiting],
                [r.namespace for r in waiting],
                [r.updated_at for r in waiting],
            ),
        )


async def insert_edges(
    conn: Conn, edges: Sequence[Edge], known: dict[str, int] | None = None
) -> None:
    """Insert edges; `known` maps row ids of this write to internal ids (a row found
    already stored under its identity is known by the id the caller gave it)."""
    if not edges:
        return
    ids = dict(known or {})
    missing = [end for e in edges for end in (e.src, e.dst) if end not in ids]
    ids |= await internal_ids(conn, missing)
    for edge in edges:
        for end in (edge.src, edge.dst):
            if end not in ids:
                raise RowNotFound(end)
    now = datetime.now(UTC)
    pairs = [e for e in edges if ids[e.src] != ids[e.dst]]
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO edges (src, dst, type, weight, created_at) VALUES (%s,%s,%s,%s,%s)"
            " ON CONFLICT (src, dst, type)"
            " DO UPDATE SET weight = greatest(edges.weight, excluded.weight)",
            [(ids[e.src], ids[e.dst], e.edge_type, e.weight, e.created_at or now) for e in pairs],
        )


async def set_status(conn: Conn, row_ids: Sequence[str], status: Status, at: datetime) -> None:
    ids = await internal_ids(conn, row_ids)
    for row_id in row_ids:
        if row_id not in ids:
            raise RowNotFound(row_id)
    await conn.execute(
        "UPDATE rows SET status = %s, updated_at = %s WHERE id = ANY(%s)",
        (status, at, list(ids.values())),
    )
