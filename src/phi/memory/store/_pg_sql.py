"""The read SQL of the PostgreSQL store (tables of `_pg_schema`): rows, edges, vectors
and text, plus the helpers the other SQL modules share.

Plain coroutines over a connection, one per query; `PostgresStore` decides the
connection and transaction each runs in. Writes live in `_pg_write`, the ledger's SQL in
`_pg_learning`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

from phi.memory.model import Edge, EdgeType, Row
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_text import BM25_SCORE, weights_cte
from phi.memory.store.base import Hit, NamespaceInfo, RowFilter

ROW_COLUMNS: Final = (
    "r.row_id, r.namespace, r.kind, r.content, r.content_hash, r.status, r.supersedes,"
    " r.trust, r.tags, r.source_uris, r.author, r.created_at, r.updated_at, r.meta,"
    " r.written_by"
)
COSINE_SQL: Final = (
    "SELECT r.row_id, 1 - (v.embedding <=> %s::vector) FROM rows r"
    " JOIN row_vectors v ON v.id = r.id WHERE r.row_id = ANY(%s)"
)
SELECT_ROWS_SQL: Final = f"SELECT {ROW_COLUMNS} FROM rows r WHERE r.row_id = ANY(%s)"


EXACT_MAX: Final = 10_000
"""Largest scope searched exactly; wider ones go through the HNSW index. Where exact search
stops paying depends on the scope's share of the store: a filtered HNSW search walks the
graph until it has found `k` rows of the scope. Measured 2026-11-26 (384-d, top 150,
load 8-9, exact through `row_vectors_scope`; median of 5): at 1M rows exact 8.3 / 14.1 /
23.7 / 89.5 / 244 ms over 1k / 2k / 5k / 20k / 50k rows in scope, HNSW with iterative
scan 29.5 / 41.1 / 87.8 / 26.5 / 35.2 ms (recall 1.0 up to 5k, 0.987 at 20k): the
crossover lies between 5k and 20k; at 100k rows exact still won at 5k (24 against 172
ms). Before the namespace layout (heap lookups per vector) it was 2,000."""
EF_SEARCH: Final = 100
"""HNSW candidate list; with iterative scan a filtered query keeps searching past it."""


def row_from(values: Sequence[Any]) -> Row:
    (row_id, namespace, kind, content, chash, status, supersedes, trust, tags, sources,
     author, created, updated, meta, written_by) = values  # fmt: skip
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
        written_by=written_by,
    )


def vector_literal(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form; `repr` of each float32 widened to float64 round-trips exactly."""
    return "[" + ",".join(repr(x) for x in vector.astype(np.float32).tolist()) + "]"


@dataclass(frozen=True, slots=True)
class QueryVector:
    """A query vector as a statement's parameter (`%(q)s::vector`), sent in pgvector's
    binary form (`vector_recv`: dimension, a reserved word, big-endian float32s): the text
    form cost 384 `repr`s here and as many float parses in the server, per search, and
    ingest sends hundreds of searches at once. Bit-exact, as the text form is."""

    data: bytes

    @classmethod
    def of(cls, vector: npt.NDArray[np.float32]) -> QueryVector:
        values = np.ascontiguousarray(vector, dtype=">f4")
        return cls(struct.pack(">HH", values.shape[0], 0) + values.tobytes())


class _QueryVectorDumper(Dumper):
    format = Format.BINARY
    # No type oid: the extension's type has none known ahead (each database gives its
    # own); the server takes the parameter's type from the statement's `::vector` cast.
    oid = 0

    def dump(self, obj: QueryVector) -> bytes:
        return obj.data


psycopg.adapters.register_dumper(QueryVector, _QueryVectorDumper)

VectorParam = str | QueryVector
"""A query vector parameter: pgvector's text form (`vector_literal`) or `QueryVector`."""


_INT8_OID: Final = 20
_INT8_ARRAY_OID: Final = 1016


@dataclass(frozen=True, slots=True)
class KeyArray:
    """Row keys (`rows.id`) as an `int8[]` parameter, in PostgreSQL's binary array form
    (`array_recv`): psycopg's list dumper adapts each int in Python, and a graph walk sends a
    few hundred keys a search (at a million rows an eighth of the walk's time in this
    process)."""

    data: bytes

    @classmethod
    def of(cls, keys: Sequence[int]) -> KeyArray:
        if not keys:  # no dimensions
            return cls(struct.pack(">iiI", 0, 0, _INT8_OID))
        items = np.empty(len(keys), dtype=[("size", ">i4"), ("key", ">i8")])
        items["size"] = 8
        items["key"] = keys
        return cls(struct.pack(">iiIii", 1, 0, _INT8_OID, len(keys), 1) + items.tobytes())


class _KeyArrayDumper(Dumper):
    format = Format.BINARY
    oid = _INT8_ARRAY_OID

    def dump(self, obj: KeyArray) -> bytes:
        return obj.data


psycopg.adapters.register_dumper(KeyArray, _KeyArrayDumper)


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


async def internal_ids(conn: Conn, row_ids: Sequence[str]) -> dict[str, int]:
    cur = await conn.execute(
        "SELECT row_id, id FROM rows WHERE row_id = ANY(%s)", (list(set(row_ids)),)
    )
    return {row_id: int(rid) for row_id, rid in await cur.fetchall()}


# -- reads -------------------------------------------------------------------------------


async def select_rows(conn: Conn, row_ids: Sequence[str]) -> list[Row]:
    cur = await conn.execute(SELECT_ROWS_SQL, (list(set(row_ids)),))
    return rows_in_order(await cur.fetchall(), row_ids)


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


async def select_refs(conn: Conn, row_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    cur = await conn.execute(
        "SELECT r.row_id, array_agg(f.ref ORDER BY f.ref) FROM row_refs f"
        " JOIN rows r ON r.id = f.id WHERE r.row_id = ANY(%s) GROUP BY r.row_id",
        (list(set(row_ids)),),
    )
    return {row_id: tuple(refs) for row_id, refs in await cur.fetchall()}


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


def scope_sql(where: RowFilter) -> tuple[str, dict[str, Any]]:
    """How many rows `where` admits, counted up to `EXACT_MAX + 1` (all of them: the
    statistics row), which decides between an exact search and the HNSW index."""
    cond, params = where_sql(where)
    if where.namespaces is None and where.thread is None:
        return "SELECT n_rows FROM text_stats", {}
    return (
        f"SELECT count(*) FROM (SELECT 1 FROM rows r WHERE {cond} LIMIT {EXACT_MAX + 1}) c",
        params,
    )


def exact_sql(
    where: RowFilter, k: int, vector: VectorParam, *, guarded: bool, texts: bool = False
) -> tuple[str, dict[str, Any]]:
    """The exact nearest rows within `where`, best first: `(row_id, score)`, and with
    `texts` the row's content, thread and key (`rows.id`) too. Ordered by similarity, not
    by the indexed distance: the planner cannot pick the approximate index for it. The
    namespace is asked of the vectors too: their scope index holds a namespace's vectors together
    (`_pg_schema.VECTOR_IN_INDEX_MAX`, `_pg_schema.cluster`). `guarded`: answer nothing
    when the scope is wider than `EXACT_MAX` (checked before any vector is read), so the
    statement can be sent beside `scope_sql`'s in one round trip.

    A namespace scope filtered by status alone is read vectors first (`_nearest_first`)."""
    cond, params = where_sql(where)
    params |= {"q": vector, "k": k}
    guard = _scope_guard(where) if guarded else ""
    extra = ", r.content, r.thread, r.id" if texts else ""
    if nearest_first(where):
        rest, _ = where_sql(replace(where, namespaces=None))
        return _nearest_first(rest, guard, extra, checked=where.statuses is not None), params
    on_vectors = " AND v.namespace = ANY(%(w_namespace)s)" if where.namespaces else ""
    return (
        f"SELECT r.row_id, 1 - (v.embedding <=> %(q)s::vector) AS score{extra} FROM row_vectors v"
        f" JOIN rows r ON r.id = v.id{on_vectors} WHERE {cond}{guard}"
        " ORDER BY score DESC, r.id LIMIT %(k)s",
        params,
    )


def _scope_guard(where: RowFilter) -> str:
    """A condition true only when `where`'s scope is at most `EXACT_MAX` rows."""
    count, _ = scope_sql(where)
    return f" AND ({count}) <= {EXACT_MAX}"


def _near(guard: str, kept: str) -> str:
    """The CTE `near`: the scope's namespace's vectors scored from its scope index alone,
    best first (`kept`: a `LIMIT`, or none for every one)."""
    return (
        "near AS MATERIALIZED (SELECT v.id, 1 - (v.embedding <=> %(q)s::vector) AS score"
        f" FROM row_vectors v WHERE v.namespace = ANY(%(w_namespace)s){guard}"
        f" ORDER BY score DESC, v.id{kept})"
    )


def nearest_first(where: RowFilter) -> bool:
    """Whether `exact_sql` reads `where`'s vectors before their rows: a namespace scope
    filtered by status alone."""
    return bool(where.namespaces) and replace(where, namespaces=None, statuses=None) == RowFilter(
        statuses=None
    )


def _nearest_first(rest: str, guard: str, extra: str, *, checked: bool) -> str:
    """`exact_sql` for a namespace scope filtered by status alone: the namespace's vectors
    scored and sorted from its scope index alone (`near`), then their rows looked up by key
    in that order, each checked against the status, until `k` pass. Looking up ~k rows by
    key costs less than joining every row of the namespace to its vector; the planner
    (PostgreSQL 17 on) knows `near`'s order and sorts nothing after the lookups. Without a
    status to check (`checked` false: ingest's neighbour searches) only the `k` nearest are
    kept."""
    kept = "" if checked else " LIMIT %(k)s"
    return (
        f"WITH {_near(guard, kept)}"
        f" SELECT r.row_id, near.score{extra} FROM near JOIN rows r ON r.id = near.id"
        f" WHERE {rest} ORDER BY near.score DESC, near.id LIMIT %(k)s"
    )


def complete_scores(where: RowFilter) -> bool:
    """Whether the exact search of `where` scores every vector of its scope (`every_score_sql`
    can send them all): a namespace scope checked by status, read vectors first."""
    return nearest_first(where) and where.statuses is not None


def every_score_sql(where: RowFilter, k: int, vector: VectorParam) -> tuple[str, dict[str, Any]]:
    """`exact_sql(..., guarded=True, texts=True)` for a scope of `complete_scores`, and one
    row more, last: `(NULL, NULL, NULL, NULL, NULL, scores)`, `scores` the cosine of every
    vector of the scope (the search computes them all anyway) as big-endian `(id int8,
    cosine float8)` pairs (`every_score`); the rows before it have `NULL` there. The graph
    walk then scores the rows it reaches in the scope without reading their vectors again:
    by key each came from a table page of its own (at 1M rows ~34 of a cold search's ~140
    reads from outside the buffer cache, and ~80 index probes)."""
    _, params = where_sql(where)
    rest, _ = where_sql(replace(where, namespaces=None))
    params |= {"q": vector, "k": k}
    return (
        f"WITH {_near(_scope_guard(where), '')},"
        " ranked AS (SELECT r.row_id, near.score, r.content, r.thread, r.id, near.id AS nid"
        f" FROM near JOIN rows r ON r.id = near.id WHERE {rest}"
        " ORDER BY near.score DESC, near.id LIMIT %(k)s)"
        " SELECT row_id, score, content, thread, id, every FROM ("
        "SELECT row_id, score, content, thread, id, NULL::bytea AS every, 0 AS part, nid"
        " FROM ranked UNION ALL SELECT NULL, NULL, NULL, NULL, NULL,"
        " (SELECT string_agg(int8send(id) || float8send(score), ''::bytea) FROM near), 1, NULL"
        ") u ORDER BY part, score DESC, nid",
        params,
    )


_SCORED = np.dtype([("id", ">i8"), ("cosine", ">f8")])


def every_score(packed: bytes) -> dict[int, float]:
    """Row key -> cosine, from `every_score_sql`'s last row."""
    pairs = np.frombuffer(packed, dtype=_SCORED)
    return dict(zip(pairs["id"].tolist(), pairs["cosine"].tolist(), strict=True))


def hits_from(found: Sequence[tuple[Any, ...]]) -> list[Hit]:
    return [Hit(row_id=i, score=float(s)) for i, s in found]


async def knn(conn: Conn, vector: VectorParam, where: RowFilter, k: int) -> list[Hit]:
    """Nearest rows within `where`, best first: exact over a scope of at most `EXACT_MAX`
    rows, else through the HNSW index with iterative scan (so a filter cannot starve it)."""
    (hits,) = await knn_many(conn, [(vector, where)], k)
    return hits


async def knn_many(
    conn: Conn, queries: Sequence[tuple[VectorParam, RowFilter]], k: int
) -> list[list[Hit]]:
    """`knn` of each query, the exact ones all in one round trip (a pipeline of guarded
    exact searches). A guarded search answers nothing for a scope wider than `EXACT_MAX`:
    only a query answered nothing has its scope counted, and a wide one then goes through
    the HNSW index, one query at a time. Searches read vectors first (`nearest_first`)
    run on generic plans: ingest sends hundreds at once, and planning each anew cost a
    third of their time at 1M rows."""
    generic = all(nearest_first(where) for _, where in queries)
    async with conn.pipeline():
        if generic:
            await conn.execute(GENERIC)
        sent = [
            await conn.execute(*exact_sql(where, k, vector, guarded=True))
            for vector, where in queries
        ]
        if generic:
            await conn.execute(CUSTOM)
        found = [hits_from(await cur.fetchall()) for cur in sent]
    answers = []
    for hits, (vector, where) in zip(found, queries, strict=True):
        if not hits and k > 0:
            cur = await conn.execute(*scope_sql(where))
            (scope,) = await cur.fetchone() or (0,)
            if scope > EXACT_MAX:
                hits = await knn_indexed(conn, vector, where, k)
        answers.append(hits)
    return answers


GENERIC: Final = "SET plan_cache_mode = force_generic_plan"
CUSTOM: Final = "RESET plan_cache_mode"
"""Around statements whose plan does not depend on the values asked, sent many times: a
prepared statement (psycopg prepares one run five times) is otherwise planned anew each
time while its custom plans look cheaper than a generic one, and planning cost more than
running (1.5 ms of 3.5 for a scoped text search at 1M rows). Both go in the pipeline of
the statements they surround: a pipeline is one implicit transaction, so a statement
that fails there takes the setting back with it."""


async def knn_indexed(conn: Conn, vector: VectorParam, where: RowFilter, k: int) -> list[Hit]:
    """Nearest rows within `where` through the HNSW index, with iterative scan, joined by
    the fresh vectors `where` admits (not in the graph yet: `_pg_write.FRESH_MAX`),
    searched exactly: both in one round trip, merged by score."""
    cond, params = where_sql(where)
    params |= {"q": vector, "k": k}
    async with conn.transaction():  # the settings hold for this transaction only
        await conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        await conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, min(k, 1000))}")
        async with conn.pipeline():
            graph = await conn.execute(
                "SELECT r.row_id, 1 - (v.embedding <=> %(q)s::vector) FROM row_vectors v"
                f" JOIN rows r ON r.id = v.id WHERE NOT v.fresh AND {cond}"
                " ORDER BY v.embedding <=> %(q)s::vector LIMIT %(k)s",
                params,
            )
            fresh = await conn.execute(
                "SELECT r.row_id, 1 - (v.embedding <=> %(q)s::vector) AS score"
                f" FROM row_vectors v JOIN rows r ON r.id = v.id WHERE v.fresh AND {cond}"
                " ORDER BY score DESC, r.id LIMIT %(k)s",
                params,
            )
            found = hits_from(await graph.fetchall()) + hits_from(await fresh.fetchall())
    return sorted(found, key=lambda h: -h.score)[:k]


def bm25_sql(
    tokens: Sequence[str],
    where: RowFilter,
    *,
    limit: int | None,
    row_ids: Sequence[str] | None = None,
    texts: bool = False,
) -> tuple[str, dict[str, Any]]:
    """`bm25`'s statement and parameters (`tokens` not empty); with `texts` each hit's
    content, thread and key (`rows.id`) follow its score."""
    chosen = (
        " AND t.id IN (SELECT id FROM rows WHERE row_id = ANY(%(ids)s))"
        if row_ids is not None
        else ""
    )
    scored, params = bm25_select(
        where, columns=", r.content, r.thread, r.id" if texts else "", chosen=chosen
    )
    params |= {"terms": list(tokens), "ids": list(row_ids or ()), "limit": limit}
    return (
        f"WITH {weights_cte()} {scored} ORDER BY score DESC, r.id LIMIT %(limit)s",
        params,
    )


def bm25_select(where: RowFilter, *, columns: str, chosen: str) -> tuple[str, dict[str, Any]]:
    """The BM25 of each row within `where` that matches a query term: `r.row_id, score`,
    then `columns`, one row each. It reads `weights_cte()`'s `w` and `s` (the terms are
    `%(terms)s`); `chosen` narrows the postings read (a condition on `t.id`)."""
    cond, params = where_sql(where)
    # The namespace inside the postings' key, so a scoped query reads only its postings.
    scope = " AND t.namespace = ANY(%(w_namespace)s)" if where.namespaces is not None else ""
    return (
        f"SELECT r.row_id, {BM25_SCORE} AS score{columns}"
        f" FROM w JOIN row_terms t ON t.term = w.term{scope}{chosen}"
        f" JOIN rows r ON r.id = t.id CROSS JOIN s WHERE {cond} GROUP BY r.id, r.row_id",
        params,
    )


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
    cur = await conn.execute(*bm25_sql(tokens, where, limit=limit, row_ids=row_ids))
    return hits_from(await cur.fetchall())


def rows_in_order(found: Sequence[Sequence[Any]], row_ids: Sequence[str]) -> list[Row]:
    by_id = {row.row_id: row for row in map(row_from, found)}
    return [by_id[i] for i in row_ids if i in by_id]


async def cosine_of(conn: Conn, vector: VectorParam, row_ids: Sequence[str]) -> dict[str, float]:
    cur = await conn.execute(COSINE_SQL, (vector, list(set(row_ids))))
    return {i: float(s) for i, s in await cur.fetchall()}


async def latest(conn: Conn, where: RowFilter, limit: int) -> list[Row]:
    (rows,) = await latest_many(conn, [where], limit)
    return rows


async def latest_many(conn: Conn, wheres: Sequence[RowFilter], limit: int) -> list[list[Row]]:
    """`latest` of each filter, in one round trip (a pipeline). The filters that are one
    namespace before a time, as ingest's temporal links ask one per namespace of a batch,
    go together in one statement: a statement each cost 0.6 ms at 1M rows, mostly in this
    process."""
    together: list[int] = []
    lone: list[int] = []
    for i, where in enumerate(wheres):
        (together if _namespace_before(where) else lone).append(i)
    found: list[list[Row]] = [[] for _ in wheres]
    async with conn.pipeline():
        batch = await _latest_before(conn, [wheres[i] for i in together], limit)
        alone = {}
        for i in lone:
            cond, params = where_sql(wheres[i])
            alone[i] = await conn.execute(
                f"SELECT {ROW_COLUMNS} FROM rows r WHERE {cond}"
                " ORDER BY r.created_at DESC, r.id DESC LIMIT %(limit)s",
                params | {"limit": limit},
            )
        if batch is not None:
            for n, *values in await batch.fetchall():
                found[together[n - 1]].append(row_from(values))
        for i, cur in alone.items():
            found[i] = list(map(row_from, await cur.fetchall()))
    return found


def _namespace_before(where: RowFilter) -> bool:
    """Whether `where` is one namespace (rows of any status) before a time."""
    return (
        where.namespaces is not None
        and len(where.namespaces) == 1
        and where.until is not None
        and replace(where, namespaces=None, until=None) == RowFilter(statuses=None)
    )


async def _latest_before(
    conn: Conn, wheres: Sequence[RowFilter], limit: int
) -> psycopg.AsyncCursor[Any] | None:
    """The statement of `latest_many` for filters `_namespace_before` admits, sent: each
    answer row is the filter's 1-based position, then the row."""
    if not wheres:
        return None
    return await conn.execute(
        f"SELECT q.n, {ROW_COLUMNS} FROM unnest(%(ns)s::text[], %(until)s::timestamptz[])"
        " WITH ORDINALITY AS q(ns, until, n) CROSS JOIN LATERAL (SELECT * FROM rows r"
        " WHERE r.namespace = q.ns AND r.created_at < q.until"
        " ORDER BY r.created_at DESC, r.id DESC LIMIT %(limit)s) r"
        " ORDER BY q.n, r.created_at DESC, r.id DESC",
        {
            "ns": [ns for w in wheres for ns in w.namespaces or ()],
            "until": [w.until for w in wheres],
            "limit": limit,
        },
    )


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
