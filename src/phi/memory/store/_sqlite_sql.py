"""The SQL of the SQLite store: plain functions over a connection, one per query.

`SQLiteStore` decides which connection and transaction each runs in; these functions only
read and write. The tables are those of `_sqlite_schema`: `rows` (keyed by an integer id
that `row_vectors`, `row_text`, `row_refs` and `edges` share) and the public `row_id`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import apsw
import numpy as np
import numpy.typing as npt

from phi.errors import RowNotFound, StoreError
from phi.memory.model import Edge, EdgeType, Row, Status
from phi.memory.store._sqlite_text import index_terms, namespace_key, scoped_bm25, stemmer
from phi.memory.store.base import (
    Hit,
    HybridQuery,
    HybridSignals,
    NamespaceInfo,
    RowFilter,
    RowWrite,
)

T = TypeVar("T")

ROW_COLUMNS: Final = (
    "r.row_id, r.namespace, r.kind, r.content, r.content_hash, r.status, r.supersedes, "
    "r.trust, r.tags, r.source_uris, r.author, r.created_at, r.updated_at, r.meta,"
    " r.written_by"
)
_CHUNK: Final = 500
"""Ids per `IN (...)` list, well under SQLite's limit on bound parameters."""
MAX_KNN: Final = 4096
"""sqlite-vec's largest `k`."""


def ts(moment: datetime) -> float:
    return moment.timestamp()


def dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def row_from(values: Sequence[Any]) -> Row:
    (
        row_id,
        namespace,
        kind,
        content,
        chash,
        status,
        supersedes,
        trust,
        tags,
        sources,
        author,
        created,
        updated,
        meta,
        written_by,
    ) = values
    return Row(
        row_id=row_id,
        namespace=namespace,
        kind=kind,
        content=content,
        content_hash=chash,
        status=status,
        supersedes=supersedes,
        trust=trust,
        tags=tuple(json.loads(tags)),
        source_uris=tuple(json.loads(sources)),
        author=author,
        created_at=dt(created),
        updated_at=dt(updated),
        meta=json.loads(meta),
        written_by=written_by,
    )


def nskey(namespace: str) -> str:
    """One FTS token per namespace, so an unscoped BM25 query can still be narrowed."""
    return namespace_key(namespace)


def marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def chunks(values: Sequence[T]) -> Iterator[Sequence[T]]:
    unique = list(dict.fromkeys(values))
    for start in range(0, len(unique), _CHUNK):
        yield unique[start : start + _CHUNK]


def match_expression(terms: Sequence[str]) -> str | None:
    """An FTS5 query matching any of `terms` in the content column, each term quoted."""
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms if t.strip()]
    return "content : (" + " OR ".join(quoted) + ")" if quoted else None


def where_sql(where: RowFilter, alias: str = "r") -> tuple[str, list[Any]]:
    """SQL conditions on the rows table for a filter (always at least one condition)."""
    sql: list[str] = ["1"]
    params: list[Any] = []
    if where.namespaces is not None:
        sql.append(f"{alias}.namespace IN ({marks(where.namespaces)})")
        params += where.namespaces
    for column, values in (("kind", where.kinds), ("status", where.statuses)):
        if values is not None:
            sql.append(f"{alias}.{column} IN ({marks(values)})")
            params += values
    for condition, value in (
        (f"{alias}.author = ?", where.author),
        (f"{alias}.thread = ?", where.thread),
        (f"{alias}.created_at >= ?", where.since and ts(where.since)),
        (f"{alias}.created_at < ?", where.until and ts(where.until)),
    ):
        if value is not None:
            sql.append(condition)
            params.append(value)
    return " AND ".join(sql), params


# -- writes ------------------------------------------------------------------------------


def upsert_row(conn: apsw.Connection, item: RowWrite, dimension: int) -> Row:
    """Insert a row with its vector, text and references, or return the row already stored
    under its `(namespace, content_hash)`: decided here, inside the write transaction, so
    two processes writing the same text at once make one row and both get it back."""
    row = item.row
    if item.vector is not None and item.vector.shape != (dimension,):
        raise StoreError(
            f"vector of shape {item.vector.shape} does not fit this store ({dimension}-d)"
        )
    thread = row.meta.get("thread")
    conn.execute(
        "INSERT INTO rows (row_id, namespace, kind, content, content_hash, status,"
        " supersedes, trust, tags, source_uris, author, thread, created_at, updated_at, meta,"
        " written_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT (namespace, content_hash) DO NOTHING",
        (
            row.row_id,
            row.namespace,
            row.kind,
            row.content,
            row.content_hash,
            row.status,
            row.supersedes,
            row.trust,
            json.dumps(list(row.tags)),
            json.dumps(list(row.source_uris)),
            row.author,
            thread if isinstance(thread, str) else None,
            ts(row.created_at),
            ts(row.updated_at),
            json.dumps(dict(row.meta), ensure_ascii=False),
            row.written_by,
        ),
    )
    if conn.changes() == 0:
        return select_by_hash(conn, [(row.namespace, row.content_hash)])[
            row.namespace, row.content_hash
        ]
    rid = conn.last_insert_rowid()
    if item.vector is None:
        # Embedded later (`_sqlite_queue.insert_vectors`); queued in this transaction.
        conn.execute(
            "INSERT INTO embed_queue (id, queued_at, namespace) VALUES (?, ?, ?)",
            (rid, ts(row.updated_at), row.namespace),
        )
    else:
        conn.execute(
            "INSERT INTO row_vectors (id, namespace, embedding, kind, status, author,"
            " created_at) VALUES (?,?,?,?,?,?,?)",
            (
                rid,
                row.namespace,
                item.vector.astype(np.float32).tobytes(),
                row.kind,
                row.status,
                row.author or "",
                ts(row.created_at),
            ),
        )
    conn.execute(
        "INSERT INTO row_text (rowid, content, nskey) VALUES (?,?,?)",
        (rid, row.content, nskey(row.namespace)),
    )
    conn.execute(
        "INSERT INTO row_terms (rowid, terms) VALUES (?, ?)",
        (rid, index_terms(stemmer(conn), row.namespace, row.content)),
    )
    conn.executemany(
        "INSERT OR IGNORE INTO row_refs (ref, id) VALUES (?, ?)", [(r, rid) for r in item.refs]
    )
    return row


def internal_ids(conn: apsw.Connection, row_ids: Sequence[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for chunk in chunks(row_ids):
        sql = f"SELECT row_id, id FROM rows WHERE row_id IN ({marks(chunk)})"
        found.update(conn.execute(sql, chunk))
    return found


def insert_edges(conn: apsw.Connection, edges: Sequence[Edge]) -> None:
    if not edges:
        return
    ids = internal_ids(conn, [e.src for e in edges] + [e.dst for e in edges])
    for edge in edges:
        for end in (edge.src, edge.dst):
            if end not in ids:
                raise RowNotFound(end)
    now = ts(datetime.now(UTC))
    conn.executemany(
        "INSERT INTO edges (src, dst, type, weight, created_at) VALUES (?,?,?,?,?)"
        " ON CONFLICT (src, dst, type) DO UPDATE SET weight = max(weight, excluded.weight)",
        [
            (
                ids[e.src],
                ids[e.dst],
                e.edge_type,
                e.weight,
                ts(e.created_at) if e.created_at else now,
            )
            for e in edges
            if e.src != e.dst
        ],
    )


def set_status(conn: apsw.Connection, row_ids: Sequence[str], status: Status, at: datetime) -> None:
    ids = internal_ids(conn, row_ids)
    for row_id in row_ids:
        if row_id not in ids:
            raise RowNotFound(row_id)
    for rid in ids.values():
        conn.execute(
            "UPDATE rows SET status = ?, updated_at = ? WHERE id = ?", (status, ts(at), rid)
        )
        conn.execute("UPDATE row_vectors SET status = ? WHERE id = ?", (status, rid))


# -- reads -------------------------------------------------------------------------------


def select_rows(conn: apsw.Connection, row_ids: Sequence[str]) -> list[Row]:
    found: dict[str, Row] = {}
    for chunk in chunks(row_ids):
        sql = f"SELECT {ROW_COLUMNS} FROM rows r WHERE r.row_id IN ({marks(chunk)})"
        found.update((row.row_id, row) for row in map(row_from, conn.execute(sql, chunk)))
    return [found[i] for i in row_ids if i in found]


def select_vectors(
    conn: apsw.Connection, row_ids: Sequence[str]
) -> dict[str, npt.NDArray[np.float32]]:
    out = {}
    for row_id, rid in internal_ids(conn, row_ids).items():
        for (blob,) in conn.execute("SELECT embedding FROM row_vectors WHERE id = ?", (rid,)):
            out[row_id] = np.frombuffer(blob, dtype=np.float32).copy()
    return out


def select_by_hash(
    conn: apsw.Connection, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], Row]:
    by_namespace: dict[str, list[str]] = {}
    for namespace, chash in keys:
        by_namespace.setdefault(namespace, []).append(chash)
    found: dict[tuple[str, str], Row] = {}
    for namespace, hashes in by_namespace.items():
        for chunk in chunks(hashes):
            sql = (
                f"SELECT {ROW_COLUMNS} FROM rows r WHERE r.namespace = ?"
                f" AND r.content_hash IN ({marks(chunk)})"
            )
            for row in map(row_from, conn.execute(sql, [namespace, *chunk])):
                found[row.namespace, row.content_hash] = row
    return found


def select_refs(conn: apsw.Connection, row_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for part in chunks(row_ids):
        for row_id, ref in conn.execute(
            "SELECT r.row_id, f.ref FROM row_refs f JOIN rows r ON r.id = f.id"
            f" WHERE r.row_id IN ({marks(part)}) ORDER BY r.row_id, f.ref",
            part,
        ):
            out.setdefault(row_id, []).append(ref)
    return {row_id: tuple(refs) for row_id, refs in out.items()}


def select_edges(
    conn: apsw.Connection, row_ids: Sequence[str], types: Sequence[EdgeType] | None
) -> list[Edge]:
    ids = list(internal_ids(conn, row_ids).values())
    type_sql = f" AND type IN ({marks(types)})" if types else ""
    columns = "src, dst, type, weight, created_at"
    out: list[Edge] = []
    for chunk in chunks(ids):
        # Two indexed lookups: an OR across src and dst would scan the whole table.
        m = marks(chunk)
        sql = (
            "SELECT s.row_id, d.row_id, e.type, e.weight, e.created_at FROM ("
            f"SELECT {columns} FROM edges WHERE src IN ({m}){type_sql}"
            f" UNION SELECT {columns} FROM edges WHERE dst IN ({m}){type_sql}"
            ") e JOIN rows s ON s.id = e.src JOIN rows d ON d.id = e.dst"
        )
        params = [*chunk, *(types or ()), *chunk, *(types or ())]
        for src, dst, etype, weight, created in conn.execute(sql, params):
            out.append(
                Edge(src=src, dst=dst, edge_type=etype, weight=weight, created_at=dt(created))
            )
    return list(dict.fromkeys(out))


def knn(conn: apsw.Connection, blob: bytes, where: RowFilter, k: int) -> list[Hit]:
    """Exact nearest rows within `where`, best first."""
    top = knn_ids(conn, blob, where, k)
    names = row_names(conn, [i for _, i in top])
    return [Hit(row_id=names[i], score=1.0 - d) for d, i in top if i in names]


def knn_ids(
    conn: apsw.Connection, blob: bytes, where: RowFilter, k: int
) -> list[tuple[float, int]]:
    """`(cosine distance, id)` of the nearest rows: one partition scan per namespace."""
    if where.thread is not None:
        return _thread_scan(conn, blob, where, k)
    scored: list[tuple[float, int]] = []
    for namespace in where.namespaces or (None,):
        scored += _knn_partition(conn, blob, namespace, where, k)
    return sorted(scored)[:k]


def row_names(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, str]:
    """Public row ids of internal ids."""
    names: dict[int, str] = {}
    for chunk in chunks(ids):
        names.update(
            conn.execute(f"SELECT id, row_id FROM rows WHERE id IN ({marks(chunk)})", chunk)
        )
    return names


def row_texts(conn: apsw.Connection, ids: Sequence[int]) -> dict[int, tuple[str, str, str | None]]:
    """`(public id, content, thread)` of internal ids."""
    found: dict[int, tuple[str, str, str | None]] = {}
    for chunk in chunks(ids):
        sql = f"SELECT id, row_id, content, thread FROM rows WHERE id IN ({marks(chunk)})"
        found.update(
            (i, (name, content, thread)) for i, name, content, thread in conn.execute(sql, chunk)
        )
    return found


def _knn_partition(
    conn: apsw.Connection, blob: bytes, namespace: str | None, where: RowFilter, k: int
) -> list[tuple[float, int]]:
    # Every filter goes inside the vec0 query (partition key and metadata columns), so the
    # k rows returned are the k best that pass it, not k rows filtered afterwards.
    sql = ["SELECT distance, id FROM row_vectors WHERE embedding MATCH ? AND k = ?"]
    params: list[Any] = [blob, k]
    if namespace is not None:
        sql.append("namespace = ?")
        params.append(namespace)
    for column, values in (("kind", where.kinds), ("status", where.statuses)):
        if values is not None:
            sql.append(f"{column} IN ({marks(values)})")
            params += values
    for condition, value in (
        ("author = ?", where.author),
        ("created_at >= ?", where.since and ts(where.since)),
        ("created_at < ?", where.until and ts(where.until)),
    ):
        if value is not None:
            sql.append(condition)
            params.append(value)
    return list(conn.execute(" AND ".join(sql), params))


def _thread_scan(
    conn: apsw.Connection, blob: bytes, where: RowFilter, k: int
) -> list[tuple[float, int]]:
    # A thread holds few rows: an exact distance over them beats a partition scan.
    cond, params = where_sql(where)
    sql = (
        "SELECT vec_distance_cosine(v.embedding, ?) AS d, r.id FROM rows r"
        f" JOIN row_vectors v ON v.id = r.id WHERE {cond} ORDER BY d LIMIT ?"
    )
    return list(conn.execute(sql, [blob, *params, k]))


def bm25(conn: apsw.Connection, terms: Sequence[str], where: RowFilter, limit: int) -> list[Hit]:
    if limit <= 0:
        return []
    scores = _bm25_ids(conn, terms, where)
    best = sorted(scores, key=lambda i: (-scores[i], i))[:limit]
    names = row_names(conn, best)
    return [Hit(row_id=names[i], score=scores[i]) for i in best if i in names]


def cosine_of(conn: apsw.Connection, blob: bytes, row_ids: Sequence[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for chunk in chunks(row_ids):
        sql = (
            "SELECT r.row_id, vec_distance_cosine(v.embedding, ?) FROM rows r"
            f" JOIN row_vectors v ON v.id = r.id WHERE r.row_id IN ({marks(chunk)})"
        )
        out.update((i, 1.0 - d) for i, d in conn.execute(sql, [blob, *chunk]))
    return out


def bm25_of(
    conn: apsw.Connection, terms: Sequence[str], row_ids: Sequence[str], where: RowFilter
) -> dict[str, float]:
    scores = _bm25_ids(conn, terms, where)
    return {name: scores[i] for name, i in internal_ids(conn, row_ids).items() if i in scores}


def latest(conn: apsw.Connection, where: RowFilter, limit: int) -> list[Row]:
    cond, params = where_sql(where)
    sql = (
        f"SELECT {ROW_COLUMNS} FROM rows r WHERE {cond}"
        " ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
    )
    return list(map(row_from, conn.execute(sql, [*params, limit])))


def ref_counts(conn: apsw.Connection, refs: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for chunk in chunks(refs):
        sql = f"SELECT ref, count(*) FROM row_refs WHERE ref IN ({marks(chunk)}) GROUP BY ref"
        out.update(conn.execute(sql, chunk))
    return out


def rows_with_ref(conn: apsw.Connection, ref: str, where: RowFilter, limit: int) -> list[str]:
    cond, params = where_sql(where)
    sql = (
        "SELECT r.row_id FROM row_refs f JOIN rows r ON r.id = f.id"
        f" WHERE f.ref = ? AND {cond} ORDER BY r.created_at DESC LIMIT ?"
    )
    return [i for (i,) in conn.execute(sql, [ref, *params, limit])]


def count(conn: apsw.Connection, where: RowFilter) -> int:
    cond, params = where_sql(where)
    return int(next(conn.execute(f"SELECT count(*) FROM rows r WHERE {cond}", params))[0])


def namespace_infos(conn: apsw.Connection, prefix: str | None) -> list[NamespaceInfo]:
    cond, params = (
        ("1", []) if prefix is None else ("substr(namespace, 1, ?) = ?", [len(prefix), prefix])
    )
    kinds: dict[str, dict[str, int]] = {}
    sql = f"SELECT namespace, kind, count(*) FROM rows WHERE {cond} GROUP BY namespace, kind"
    for ns, kind, n in conn.execute(sql, params):
        kinds.setdefault(ns, {})[kind] = n
    sql = (
        "SELECT namespace, count(*), sum(status = 'active'), max(created_at) FROM rows"
        f" WHERE {cond} GROUP BY namespace ORDER BY namespace"
    )
    return [
        NamespaceInfo(
            namespace=ns,
            rows=n,
            active=active,
            kinds=kinds.get(ns, {}),
            last_created_at=dt(last) if last is not None else None,
        )
        for ns, n, active, last in conn.execute(sql, params)
    ]


def scan_batch(
    conn: apsw.Connection, where: RowFilter, after: tuple[float, int], size: int
) -> list[tuple[Row, tuple[float, int]]]:
    """Rows after the `(created_at, id)` key `after`, oldest first, with their own keys."""
    cond, params = where_sql(where)
    sql = (
        f"SELECT {ROW_COLUMNS}, r.id FROM rows r WHERE {cond}"
        " AND (r.created_at, r.id) > (?, ?) ORDER BY r.created_at, r.id LIMIT ?"
    )
    return [
        (row_from(values[:-1]), (values[11], values[-1]))
        for values in conn.execute(sql, [*params, *after, size])
    ]


def totals(conn: apsw.Connection) -> tuple[int, int, int]:
    """Rows, edges and namespaces."""
    rows, namespaces = next(conn.execute("SELECT count(*), count(DISTINCT namespace) FROM rows"))
    (edges,) = next(conn.execute("SELECT count(*) FROM edges"))
    return int(rows), int(edges), int(namespaces)


# -- one hybrid recall in one read transaction, on internal ids ------------------------------


def hybrid(conn: apsw.Connection, blob: bytes, query: HybridQuery) -> HybridSignals:
    """`RowStore.hybrid`: every step on integer ids, public ids looked up once at the end."""
    where = query.where
    # A partition scan computes every distance anyway: a deeper pool costs little and
    # already holds the scores of most rows the graph walk will reach.
    pool = {i: 1.0 - d for d, i in knn_ids(conn, blob, where, min(query.candidates * 10, MAX_KNN))}
    dense = dict(list(pool.items())[: query.candidates])
    # One BM25 pass: the best `candidates` are the text candidates, the rest of the
    # scope's matches are kept for rows the graph walk may reach.
    matches = _bm25_ids(conn, query.terms, where)
    ranked = sorted(matches, key=lambda i: -matches[i])
    text = {i: matches[i] for i in ranked[: query.candidates]}

    def as_hits(scores: dict[int, float]) -> list[Hit]:
        return [Hit(row_id=str(i), score=s) for i, s in scores.items()]

    seeds = (
        {int(i) for i in query.seeds(as_hits(dense), as_hits(text))} if query.graph_types else set()
    )
    adjacency: dict[int, set[int]] = {}
    explored: set[int] = set()
    frontier = seeds
    for _ in range(query.hops):
        if not frontier:
            break
        for src, dst in _edge_pairs(conn, sorted(frontier), query.graph_types):
            adjacency.setdefault(src, set()).add(dst)
            adjacency.setdefault(dst, set()).add(src)
        explored |= frontier
        frontier = set(adjacency) - explored
    extra = sorted(set(adjacency) - set(dense) - set(text))
    dense_extra = {i: pool[i] for i in extra if i in pool}
    dense_extra |= _cosine_ids(conn, blob, [i for i in extra if i not in pool], where)
    text_extra = {i: matches[i] for i in extra if i in matches}
    hit_ids = sorted({*dense, *text, *dense_extra, *text_extra})
    texts = row_texts(conn, hit_ids)
    names = {i: name for i, (name, _, _) in texts.items()}
    names |= row_names(conn, sorted(set(adjacency) - set(names)))

    def named(scores: dict[int, float]) -> list[Hit]:
        return [Hit(row_id=names[i], score=s) for i, s in scores.items() if i in names]

    return HybridSignals(
        dense=named(dense) + named(dense_extra),
        text=named(text) + named(text_extra),
        from_dense=frozenset(names[i] for i in dense if i in names),
        from_text=frozenset(names[i] for i in text if i in names),
        adjacency={
            names[a]: sorted(names[b] for b in linked if b in names)
            for a, linked in adjacency.items()
            if a in names
        },
        contents={name: content for name, content, _ in texts.values()},
        threads={name: thread for name, _, thread in texts.values() if thread},
    )


def _bm25_ids(conn: apsw.Connection, terms: Sequence[str], where: RowFilter) -> dict[int, float]:
    """BM25 of every row within `where` that matches any of `terms`.

    A scoped query reads each namespace's own terms (`row_terms`, see `_sqlite_text`); an
    unscoped one reads `row_text`, whose terms all namespaces share. Column weights
    (1, 0) there: the namespace column must not add to the score.
    """
    cond, params = where_sql(where)
    if where.namespaces is not None:
        scores: dict[int, float] = {}
        for namespace in dict.fromkeys(where.namespaces):
            scores |= scoped_bm25(conn, terms, namespace, cond, params)
        return scores
    match = match_expression(terms)
    if match is None:
        return {}
    sql = (
        "SELECT r.id, -bm25(row_text, 1.0, 0.0) FROM row_text"
        f" JOIN rows r ON r.id = row_text.rowid WHERE row_text MATCH ? AND {cond}"
    )
    return dict(conn.execute(sql, [match, *params]))


def _edge_pairs(
    conn: apsw.Connection, ids: Sequence[int], types: Sequence[EdgeType]
) -> list[tuple[int, int]]:
    type_sql = f" AND type IN ({marks(types)})" if types else ""
    pairs: list[tuple[int, int]] = []
    for chunk in chunks(ids):
        m = marks(chunk)
        sql = (
            f"SELECT src, dst FROM edges WHERE src IN ({m}){type_sql}"
            f" UNION SELECT src, dst FROM edges WHERE dst IN ({m}){type_sql}"
        )
        pairs += conn.execute(sql, [*chunk, *types, *chunk, *types])
    return pairs


def _cosine_ids(
    conn: apsw.Connection, blob: bytes, ids: Sequence[int], where: RowFilter
) -> dict[int, float]:
    cond, params = where_sql(where)
    out: dict[int, float] = {}
    for chunk in chunks(ids):
        sql = (
            "SELECT r.id, 1.0 - vec_distance_cosine(v.embedding, ?) FROM rows r"
            f" JOIN row_vectors v ON v.id = r.id WHERE r.id IN ({marks(chunk)}) AND {cond}"
        )
        out.update(conn.execute(sql, [blob, *chunk, *params]))
    return out
