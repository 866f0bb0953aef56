"""The row, edge, vector and text SQL of the PostgreSQL store (tables of `_pg_schema`).

Plain coroutines over a connection, one per query; `PostgresStore` decides the
connection and transaction each runs in. The ledger's SQL lives in `_pg_learning`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from psycopg.types.json import Jsonb

from phi.errors import NamespaceNotFound, RowNotFound, StoreError
from phi.memory.model import Edge, EdgeType, Row, Status
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_text import BM25_SCORE, Tokenizer, weights_cte
from phi.memory.store.base import ForgetReport, Hit, NamespaceInfo, RowFilter, RowWrite

ROW_COLUMNS: Final = (
    "r.row_id, r.namespace, r.kind, r.content, r.content_hash, r.status, r.supersedes,"
    " r.trust, r.tags, r.source_uris, r.author, r.created_at, r.updated_at, r.meta"
)
EXACT_MAX: Final = 2000
"""Largest scope searched exactly; wider ones go through the HNSW index. Measured on 2
busy cores, 384-d, top 10: exact 3.7 ms over 1,000 rows and 24 ms over 2,500; HNSW with
iterative scan 4-6.5 ms over 22,000 rows, filtered or not."""
EF_SEARCH: Final = 100
"""HNSW candidate list; with iterative scan a filtered query keeps searching past it."""


def row_from(values: Sequence[Any]) -> Row:
    (row_id, namespace, kind, content, chash, status, supersedes, trust, tags, sources,
     author, created, updated, meta) = values  # fmt: skip
    return Row(
        row_id=row_id,
        namespace=namespace,
        kind=kind,
        content=content,
        content_hash=chash,
        status=status,
        supersedes=supersedes,
        trust=trust,
        tags=tuple(tags),
        source_uris=tuple(sources),
        author=author,
        created_at=created.astimezone(UTC),
        updated_at=updated.astimezone(UTC),
        meta=meta,
    )


def vector_literal(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form; `repr` of each float32 widened to float64 round-trips exactly."""
    return "[" + ",".join(repr(x) for x in vector.astype(np.float32).tolist()) + "]"


def where_sql(where: RowFilter, alias: str = "r") -> tuple[str, dict[str, Any]]:
    """SQL conditions on the rows table for a filter, with named parameters `w_*`."""
    sql: list[str] = ["true"]
    params: dict[str, Any] = {}
    for column, values in (
        ("namespace", where.namespaces),
        ("kind", where.kinds),
        ("status", where.statuses),
    ):
        if values is not None:
            sql.append(f"{alias}.{column} = ANY(%(w_{column})s)")
            params[f"w_{column}"] = list(values)
    for column, op, value in (
        ("author", "=", where.author),
        ("thread", "=", where.thread),
        ("since", ">=", where.since),
        ("until", "<", where.until),
    ):
        if value is not None:
            target = "created_at" if column in ("since", "until") else column
            sql.append(f"{alias}.{target} {op} %(w_{column})s")
            params[f"w_{column}"] = value
    return " AND ".join(sql), params


# -- writes ------------------------------------------------------------------------------


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
        if item.vector.shape != (dimension,):
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
        " trust, tags, source_uris, author, thread, created_at, updated_at, meta, doc_len)"
        " SELECT u.row_id, u.namespace, u.kind, u.content, u.content_hash, u.status,"
        " u.supersedes, u.trust, ARRAY(SELECT jsonb_array_elements_text(u.tags)),"
        " ARRAY(SELECT jsonb_array_elements_text(u.sources)), u.author, u.thread,"
        " u.created_at, u.updated_at, u.meta, u.doc_len FROM unnest("
        "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[],"
        " %s::text[], %s::jsonb[], %s::jsonb[], %s::text[], %s::text[], %s::timestamptz[],"
        " %s::timestamptz[], %s::jsonb[], %s::int[]) WITH ORDINALITY AS u(row_id, namespace,"
        " kind, content, content_hash, status, supersedes, trust, tags, sources, author,"
        " thread, created_at, updated_at, meta, doc_len, n) ORDER BY u.n"
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
        ),
    )
    inserted = {row_id: int(rid) for row_id, rid in await cur.fetchall()}
    new = [i for i, row in enumerate(rows) if row.row_id in inserted]
    if new:
        await _index_new(conn, [items[i] for i in new], [postings[i] for i in new], inserted)
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
    postings: Sequence[tuple[Counter[str], int]],
    ids: dict[str, int],
) -> None:
    """Vectors, postings, statistics and references of freshly inserted rows."""
    rids = [ids[item.row.row_id] for item in items]
    await conn.execute(
        "INSERT INTO row_vectors (id, embedding)"
        " SELECT i, v::vector FROM unnest(%s::bigint[], %s::text[]) AS u(i, v)",
        (rids, [vector_literal(item.vector) for item in items]),
    )
    terms, namespaces, term_ids, tfs = [], [], [], []
    df: Counter[str] = Counter()
    for item, rid, (counts, _) in zip(items, rids, postings, strict=True):
        for term, tf in counts.items():
            terms.append(term)
            namespaces.append(item.row.namespace)
            term_ids.append(rid)
            tfs.append(tf)
        df.update(counts.keys())
    if terms:
        await conn.execute(
            "INSERT INTO row_terms (term, namespace, id, tf)"
            " SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::int[])",
            (terms, namespaces, term_ids, tfs),
        )
        ordered = sorted(df)
        await conn.execute(
            "INSERT INTO term_df (term, df)"
            " SELECT * FROM unnest(%s::text[], %s::bigint[])"
            " ON CONFLICT (term) DO UPDATE SET df = term_df.df + excluded.df",
            (ordered, [df[t] for t in ordered]),
        )
    await conn.execute(
        "UPDATE text_stats SET n_rows = n_rows + %s, total_len = total_len + %s",
        (len(items), sum(length for _, length in postings)),
    )
    refs = [(ref, rid) for item, rid in zip(items, rids, strict=True) for ref in set(item.refs)]
    if refs:
        await conn.execute(
            "INSERT INTO row_refs (ref, id) SELECT * FROM unnest(%s::text[], %s::bigint[])"
            " ON CONFLICT DO NOTHING",
            ([r for r, _ in refs], [i for _, i in refs]),
        )


async def internal_ids(conn: Conn, row_ids: Sequence[str]) -> dict[str, int]:
    cur = await conn.execute(
        "SELECT row_id, id FROM rows WHERE row_id = ANY(%s)", (list(set(row_ids)),)
    )
    return {row_id: int(rid) for row_id, rid in await cur.fetchall()}


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


async def erase_namespace(conn: Conn, namespace: str) -> ForgetReport:
    cur = await conn.execute(
        "SELECT kind, count(*), sum(doc_len) FROM rows WHERE namespace = %s GROUP BY kind",
        (namespace,),
    )
    found = await cur.fetchall()
    if not found:
        raise NamespaceNotFound(namespace)
    kinds = {kind: int(n) for kind, n, _ in found}
    rows, length = sum(kinds.values()), sum(int(s) for _, _, s in found)
    cur = await conn.execute(
        "SELECT count(*) FROM edges WHERE src IN (SELECT id FROM rows WHERE namespace = %s)"
        " OR dst IN (SELECT id FROM rows WHERE namespace = %s)",
        (namespace, namespace),
    )
    (edges,) = await cur.fetchone() or (0,)
    await conn.execute(
        "UPDATE term_df d SET df = d.df - x.n FROM (SELECT t.term, count(*) AS n FROM row_terms t"
        " JOIN rows r ON r.id = t.id WHERE r.namespace = %s GROUP BY t.term) x"
        " WHERE d.term = x.term",
        (namespace,),
    )
    await conn.execute("DELETE FROM term_df WHERE df <= 0")
    await conn.execute(
        "UPDATE text_stats SET n_rows = n_rows - %s, total_len = total_len - %s", (rows, length)
    )
    # Vectors, postings, references, edges and learning marks go by cascade.
    await conn.execute("DELETE FROM rows WHERE namespace = %s", (namespace,))
    return ForgetReport(namespace=namespace, rows=rows, edges=int(edges), kinds=kinds)


# -- reads -------------------------------------------------------------------------------


async def select_rows(conn: Conn, row_ids: Sequence[str]) -> list[Row]:
    cur = await conn.execute(
        f"SELECT {ROW_COLUMNS} FROM rows r WHERE r.row_id = ANY(%s)", (list(set(row_ids)),)
    )
    found = {row.row_id: row for row in map(row_from, await cur.fetchall())}
    return [found[i] for i in row_ids if i in found]


async def select_vectors(conn: Conn, row_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
    cur = await conn.execute(
        "SELECT r.row_id, v.embedding::real[] FROM rows r JOIN row_vectors v ON v.id = r.id"
        " WHERE r.row_id = ANY(%s)",
        (list(set(row_ids)),),
    )
    return {i: np.array(values, dtype=np.float32) for i, values in await cur.fetchall()}


async def select_by_hash(conn: Conn, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Row]:
    if not keys:
        return {}
    cur = await conn.execute(
        f"SELECT {ROW_COLUMNS} FROM rows r JOIN unnest(%s::text[], %s::text[]) AS k(ns, h)"
        " ON r.namespace = k.ns AND r.content_hash = k.h",
        ([n for n, _ in keys], [h for _, h in keys]),
    )
    return {(r.namespace, r.content_hash): r for r in map(row_from, await cur.fetchall())}


async def select_edges(
    conn: Conn, row_ids: Sequence[str], types: Sequence[EdgeType] | None
) -> list[Edge]:
    type_sql = " AND type = ANY(%(types)s)" if types else ""
    columns = "src, dst, type, weight, created_at"
    # Two indexed lookups: an OR across src and dst would scan the whole table.
    cur = await conn.execute(
        "WITH ids AS (SELECT id FROM rows WHERE row_id = ANY(%(ids)s))"
        " SELECT s.row_id, d.row_id, e.type, e.weight, e.created_at FROM ("
        f" SELECT {columns} FROM edges WHERE src IN (SELECT id FROM ids){type_sql}"
        f" UNION SELECT {columns} FROM edges WHERE dst IN (SELECT id FROM ids){type_sql}"
        ") e JOIN rows s ON s.id = e.src JOIN rows d ON d.id = e.dst",
        {"ids": list(set(row_ids)), "types": list(types or ())},
    )
    return [
        Edge(src=s, dst=d, edge_type=t, weight=w, created_at=c.astimezone(UTC))
        for s, d, t, w, c in await cur.fetchall()
    ]


async def knn(conn: Conn, vector: str, where: RowFilter, k: int) -> list[Hit]:
    """Nearest rows within `where`, best first: exact over a scope of at most `EXACT_MAX`
    rows, else through the HNSW index with iterative scan (so a filter cannot starve it)."""
    cond, params = where_sql(where)
    params |= {"q": vector, "k": k}
    if where.namespaces is None and where.thread is None:
        cur = await conn.execute("SELECT n_rows FROM text_stats")
    else:
        cur = await conn.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM rows r WHERE {cond} LIMIT {EXACT_MAX + 1}) c",
            params,
        )
    (scope,) = await cur.fetchone() or (0,)
    if scope <= EXACT_MAX:
        # Ordered by similarity, not by the indexed distance: the planner cannot pick the
        # approximate index for it.
        cur = await conn.execute(
            "SELECT r.row_id, 1 - (v.embedding <=> %(q)s::vector) AS score FROM rows r"
            f" JOIN row_vectors v ON v.id = r.id WHERE {cond}"
            " ORDER BY score DESC, r.id LIMIT %(k)s",
            params,
        )
        return [Hit(row_id=i, score=float(s)) for i, s in await cur.fetchall()]
    async with conn.transaction():  # the settings hold for this transaction only
        await conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        await conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, min(k, 1000))}")
        cur = await conn.execute(
            "SELECT r.row_id, 1 - (v.embedding <=> %(q)s::vector) FROM row_vectors v"
            f" JOIN rows r ON r.id = v.id WHERE {cond}"
            " ORDER BY v.embedding <=> %(q)s::vector LIMIT %(k)s",
            params,
        )
        return [Hit(row_id=i, score=float(s)) for i, s in await cur.fetchall()]


async def bm25(
    conn: Conn,
    tokens: Sequence[str],
    where: RowFilter,
    *,
    limit: int | None,
    row_ids: Sequence[str] | None = None,
) -> list[Hit]:
    """Rows within `where` (and among `row_ids`, if given) matching any token, by BM25."""
    if not tokens or (limit is not None and limit <= 0):
        return []
    cond, params = where_sql(where)
    # The namespace inside the postings' key, so a scoped query reads only its postings.
    scope = " AND t.namespace = ANY(%(w_namespace)s)" if where.namespaces is not None else ""
    chosen = (
        " AND t.id IN (SELECT id FROM rows WHERE row_id = ANY(%(ids)s))"
        if row_ids is not None
        else ""
    )
    params |= {"terms": list(tokens), "ids": list(row_ids or ()), "limit": limit}
    cur = await conn.execute(
        f"WITH {weights_cte()} SELECT r.row_id, {BM25_SCORE} AS score"
        f" FROM w JOIN row_terms t ON t.term = w.term{scope}{chosen}"
        f" JOIN rows r ON r.id = t.id CROSS JOIN s WHERE {cond}"
        " GROUP BY r.id, r.row_id ORDER BY score DESC, r.id LIMIT %(limit)s",
        params,
    )
    return [Hit(row_id=i, score=float(s)) for i, s in await cur.fetchall()]


async def cosine_of(conn: Conn, vector: str, row_ids: Sequence[str]) -> dict[str, float]:
    cur = await conn.execute(
        "SELECT r.row_id, 1 - (v.embedding <=> %s::vector) FROM rows r"
        " JOIN row_vectors v ON v.id = r.id WHERE r.row_id = ANY(%s)",
        (vector, list(set(row_ids))),
    )
    return {i: float(s) for i, s in await cur.fetchall()}


async def latest(conn: Conn, where: RowFilter, limit: int) -> list[Row]:
    cond, params = where_sql(where)
    cur = await conn.execute(
        f"SELECT {ROW_COLUMNS} FROM rows r WHERE {cond}"
        " ORDER BY r.created_at DESC, r.id DESC LIMIT %(limit)s",
        params | {"limit": limit},
    )
    return list(map(row_from, await cur.fetchall()))


async def ref_counts(conn: Conn, refs: Sequence[str]) -> dict[str, int]:
    cur = await conn.execute(
        "SELECT ref, count(*) FROM row_refs WHERE ref = ANY(%s) GROUP BY ref", (list(set(refs)),)
    )
    return {ref: int(n) for ref, n in await cur.fetchall()}


async def rows_with_ref(conn: Conn, ref: str, where: RowFilter, limit: int) -> list[str]:
    cond, params = where_sql(where)
    cur = await conn.execute(
        "SELECT r.row_id FROM row_refs f JOIN rows r ON r.id = f.id"
        f" WHERE f.ref = %(ref)s AND {cond} ORDER BY r.created_at DESC, r.id DESC"
        " LIMIT %(limit)s",
        params | {"ref": ref, "limit": limit},
    )
    return [i for (i,) in await cur.fetchall()]


async def count(conn: Conn, where: RowFilter) -> int:
    cond, params = where_sql(where)
    cur = await conn.execute(f"SELECT count(*) FROM rows r WHERE {cond}", params)
    (n,) = await cur.fetchone() or (0,)
    return int(n)


async def namespace_infos(conn: Conn, prefix: str | None) -> list[NamespaceInfo]:
    cond = "true" if prefix is None else "starts_with(namespace, %(prefix)s)"
    params = {"prefix": prefix}
    cur = await conn.execute(
        f"SELECT namespace, kind, count(*) FROM rows WHERE {cond} GROUP BY namespace, kind",
        params,
    )
    kinds: dict[str, dict[str, int]] = {}
    for ns, kind, n in await cur.fetchall():
        kinds.setdefault(ns, {})[kind] = int(n)
    cur = await conn.execute(
        "SELECT namespace, count(*), count(*) FILTER (WHERE status = 'active'),"
        f" max(created_at) FROM rows WHERE {cond} GROUP BY namespace ORDER BY namespace",
        params,
    )
    return [
        NamespaceInfo(
            namespace=ns,
            rows=int(n),
            active=int(active),
            kinds=kinds.get(ns, {}),
            last_created_at=last.astimezone(UTC) if last is not None else None,
        )
        for ns, n, active, last in await cur.fetchall()
    ]


async def scan_batch(
    conn: Conn, where: RowFilter, after: tuple[datetime, int] | None, size: int
) -> list[tuple[Row, tuple[datetime, int]]]:
    """Rows after the `(created_at, id)` key `after`, oldest first, with their own keys."""
    cond, params = where_sql(where)
    if after is not None:
        cond += " AND (r.created_at, r.id) > (%(after_at)s, %(after_id)s)"
        params |= {"after_at": after[0], "after_id": after[1]}
    cur = await conn.execute(
        f"SELECT {ROW_COLUMNS}, r.id FROM rows r WHERE {cond}"
        " ORDER BY r.created_at, r.id LIMIT %(size)s",
        params | {"size": size},
    )
    return [(row_from(v[:-1]), (v[11], int(v[-1]))) for v in await cur.fetchall()]


async def totals(conn: Conn) -> tuple[int, int, int, int]:
    """Rows, edges, namespaces and bytes on disk."""
    cur = await conn.execute(
        "SELECT (SELECT count(*) FROM rows), (SELECT count(*) FROM edges),"
        " (SELECT count(DISTINCT namespace) FROM rows),"
        " (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
        "  WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r')"
    )
    rows, edges, namespaces, size = await cur.fetchone() or (0, 0, 0, 0)
    return int(rows), int(edges), int(namespaces), int(size)
