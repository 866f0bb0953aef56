"""Namespace locality of the PostgreSQL store (migration 5, issue 27): a scoped search
reads its namespace's pages, not pages all over the store. Each layout test asks the
planner (EXPLAIN) or the table itself, so a regressed layout fails here, not only in a
benchmark."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest

from phi.memory.model import Edge
from phi.memory.store import EmbeddingSpec, PostgresStore, RowFilter, RowWrite, _pg_sql, _pg_write
from phi.memory.store._pg_admin import PostgresAdmin
from phi.memory.store._pg_schema import code_version, schema_version, vector_in_index
from phi.memory.store.base import HybridQuery
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w

pytestmark = pytest.mark.anyio

WIDE = EmbeddingSpec(model="synthetic-1536", dimension=1536)


def unit(rng: np.random.Generator, dim: int) -> npt.NDArray[np.float32]:
    v = rng.standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def rows_for(namespaces: int, each: int, dim: int, seed: int = 5) -> list[RowWrite]:
    """`each` rows in each of `namespaces` namespaces, interleaved (as rows arrive)."""
    rng = np.random.default_rng(seed)
    return [
        w(make_row(f"note {i} of {n}", namespace=f"ns-{n:02d}", at=i), unit(rng, dim))
        for i in range(each)
        for n in range(namespaces)
    ]


async def plan(url: str, statement: str, params: Any) -> list[dict[str, Any]]:
    """Every node of the executed plan of `statement` (EXPLAIN ANALYZE, as JSON)."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, params)
        (found,) = await cur.fetchone() or ([],)
    tree = found[0]["Plan"] if not isinstance(found, str) else json.loads(found)[0]["Plan"]
    nodes, todo = [], [tree]
    while todo:
        node = todo.pop()
        nodes.append(node)
        todo.extend(node.get("Plans", []))
    return nodes


async def run(url: str, *statements: str) -> list[tuple[Any, ...]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        found: list[tuple[Any, ...]] = []
        for statement in statements:
            cur = await conn.execute(statement)
            if cur.description is not None:
                found = await cur.fetchall()
        return found


@pytest.fixture
async def wide_store(pg_url: str) -> AsyncIterator[PostgresStore]:
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(WIDE)
    yield store
    await store.close()


async def test_a_namespace_search_reads_its_vectors_from_the_scope_index_alone(
    pg_url: str,
) -> None:
    """384-d and narrower: the namespace's vectors are inside `row_vectors_scope`; the
    exact search is an index-only scan of it that visits no table page."""
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    try:
        writes = rows_for(40, 50, CONFORMANCE_SPEC.dimension)
        for start in range(0, len(writes), 500):
            await store.write(writes[start : start + 500], [])
        await run(pg_url, "VACUUM (ANALYZE) rows", "VACUUM (ANALYZE) row_vectors")
        where = RowFilter(namespaces=("ns-07",))
        statement, params = _pg_sql.exact_sql(
            where, 10, _pg_sql.vector_literal(vec(1, 0, 0, 0)), guarded=True
        )
        nodes = await plan(pg_url, statement, params)
        scans = [n for n in nodes if n.get("Relation Name") == "row_vectors"]
        assert [(n["Node Type"], n["Index Name"]) for n in scans] == [
            ("Index Only Scan", "row_vectors_scope")
        ]
        assert scans[0]["Heap Fetches"] == 0
        assert scans[0]["Actual Rows"] == 50  # the namespace's vectors, no other
        hits = await store.vector_search(vec(1, 0, 0, 0), where, limit=10)
        assert {r.namespace for r in await store.get_rows([h.row_id for h in hits])} == {"ns-07"}
    finally:
        await store.close()


async def test_wide_vectors_are_read_in_namespace_order_from_the_table_itself(
    wide_store: PostgresStore, pg_url: str
) -> None:
    """1,536-d vectors do not fit a B-tree entry: the scope index holds keys only, a bulk
    load leaves the table in namespace order, and each vector stays in its table page (no
    TOAST), so a namespace's vectors are adjacent pages."""
    assert not vector_in_index(WIDE.dimension) and vector_in_index(384)
    writes = rows_for(12, 20, WIDE.dimension)
    async with wide_store.bulk_load() as bulk:
        assert bulk
        await wide_store.write(writes, [])
    (include,) = await run(
        pg_url,
        "SELECT i.indnatts - i.indnkeyatts FROM pg_index i"
        " WHERE i.indexrelid = 'row_vectors_scope'::regclass",
    )
    assert include == (0,)
    order = [ns for (ns,) in await run(pg_url, "SELECT namespace FROM row_vectors ORDER BY ctid")]
    assert order == sorted(order) and len(order) == len(writes)
    rows_order = [ns for (ns,) in await run(pg_url, "SELECT namespace FROM rows ORDER BY ctid")]
    assert rows_order == sorted(rows_order)
    ((toasted,),) = await run(
        pg_url,
        "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'row_vectors'::regclass",
    )
    assert toasted == 0
    await run(pg_url, "SET enable_seqscan = off")  # a 240-row table is read whole otherwise
    where = RowFilter(namespaces=("ns-03",))
    query = _pg_sql.vector_literal(unit(np.random.default_rng(1), WIDE.dimension))
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("ANALYZE row_vectors")
    nodes = await plan(pg_url, *_pg_sql.exact_sql(where, 5, query, guarded=False))
    scans = [n for n in nodes if n.get("Relation Name") == "row_vectors"]
    assert len(scans) == 1 and scans[0].get("Index Name") == "row_vectors_scope"
    assert scans[0]["Actual Rows"] == 20


async def old_layout(url: str) -> None:
    """Take a store back to the layout before migration 5: vectors without their
    namespace, in no particular order, and the migration not recorded."""
    await run(
        url,
        "CREATE TABLE rv_keep AS SELECT id, embedding FROM row_vectors",
        "DROP TABLE row_vectors",
        "CREATE TABLE row_vectors (id bigint PRIMARY KEY REFERENCES rows (id) ON DELETE"
        " CASCADE, embedding vector(4) NOT NULL)",
        "INSERT INTO row_vectors SELECT id, embedding FROM rv_keep ORDER BY id DESC",
        "DROP TABLE rv_keep",
        "CREATE INDEX row_vectors_hnsw ON row_vectors USING hnsw (embedding vector_cosine_ops)",
        "DELETE FROM phi_migrations WHERE name = 'm005_namespace_locality'",
    )


async def test_a_store_from_before_migration_5_is_upgraded_in_place_and_answers_the_same(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    writes = rows_for(3, 30, CONFORMANCE_SPEC.dimension)
    chain = [
        Edge(src=a.row.row_id, dst=b.row.row_id, edge_type="temporal") for a, b in pairwise(writes)
    ]
    waiting = make_row("waits for its vector", namespace="ns-01")
    await store.write([*writes, w(waiting, None)], chain)
    q = vec(1, 0.2, 0, 0.3)
    query = HybridQuery(
        vector=q, terms=("note", "ns"), where=RowFilter(namespaces=("ns-01",)), candidates=8,
        graph_types=("temporal",), hops=2, seeds=lambda d, t: [d[0].row_id],
    )  # fmt: skip
    scopes = [RowFilter(namespaces=(f"ns-{n:02d}",)) for n in range(3)] + [RowFilter()]
    before = [await store.vector_search(q, s, limit=7) for s in scopes]
    hybrid_before = await store.hybrid(query)
    await store.close()

    await old_layout(pg_url)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert (await schema_version(conn)).number == code_version().number - 1
    store = PostgresStore(pg_url, auto_upgrade=True)
    await store.connect()
    try:
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            assert await schema_version(conn) == code_version()
        ((vectors, named),) = await run(
            pg_url, "SELECT count(*), count(namespace) FROM row_vectors"
        )
        assert vectors == named == len(writes)
        mismatched = await run(
            pg_url,
            "SELECT v.id FROM row_vectors v JOIN rows r ON r.id = v.id"
            " WHERE v.namespace <> r.namespace",
        )
        assert mismatched == []
        order = [ns for (ns,) in await run(pg_url, "SELECT namespace FROM rows ORDER BY ctid")]
        assert order == sorted(order)
        for scope, hits in zip(scopes, before, strict=True):
            again = await store.vector_search(q, scope, limit=7)
            assert [(h.row_id, round(h.score, 5)) for h in again] == [
                (h.row_id, round(h.score, 5)) for h in hits
            ]
        hybrid_after = await store.hybrid(query)
        for after, was in (
            (hybrid_after.dense, hybrid_before.dense),
            (hybrid_after.text, hybrid_before.text),
        ):
            # The candidates in rank order; the rows the graph reached after them, in the
            # order the server returned their scores (not a ranking).
            assert after[: query.candidates] == was[: query.candidates]
            assert {h.row_id: round(h.score, 5) for h in after} == {
                h.row_id: round(h.score, 5) for h in was
            }
        assert hybrid_after.adjacency == hybrid_before.adjacency
        assert hybrid_after.unembedded == hybrid_before.unembedded == 1
        assert await store.count_unembedded(RowFilter()) == 1
        (hnsw,) = await run(pg_url, "SELECT to_regclass('row_vectors_hnsw') IS NOT NULL")
        assert hnsw == (True,)
        # A row written after the upgrade gets its namespace with its vector.
        late = make_row("written after the upgrade", namespace="ns-02")
        await store.write([w(late, vec(0, 0, 1, 0))], [])
        assert (await store.vector_search(vec(0, 0, 1, 0), scopes[2], limit=1))[0].row_id == (
            late.row_id
        )
    finally:
        await store.close()


async def test_moving_to_another_model_keeps_the_namespace_layout(pg_url: str) -> None:
    """The re-embedding swap rebuilds `row_vectors` at the new dimension (in
    `_pg_reembed`, as before this layout): `create_vector_table` brings it to this one."""
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    try:
        rows = [make_row(f"r{i}", namespace=f"ns-{i % 2}") for i in range(6)]
        await store.write([w(r, vec(1, i, 0, 0)) for i, r in enumerate(rows)], [])
        three = EmbeddingSpec(model="three-d", dimension=3)
        moved = {
            r.row_id: np.array([1.0, i, 0.5], dtype=np.float32) / np.hypot(1, i)
            for i, r in enumerate(rows)
        }
        assert await store.swap_embedding(three, moved) == 0
        ((named, total),) = await run(pg_url, "SELECT count(namespace), count(*) FROM row_vectors")
        assert named == total == 6
        (include,) = await run(
            pg_url,
            "SELECT i.indnatts - i.indnkeyatts FROM pg_index i"
            " WHERE i.indexrelid = 'row_vectors_scope'::regclass",
        )
        assert include == (1,)  # the embedding, inside the index
        hits = await store.vector_search(
            np.array([1, 0, 0.5], dtype=np.float32), RowFilter(namespaces=("ns-1",)), limit=5
        )
        assert {r.namespace for r in await store.get_rows([h.row_id for h in hits])} == {"ns-1"}
        assert len(hits) == 3
    finally:
        await store.close()


async def test_searches_of_many_scopes_agree_with_one_at_a_time(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`knn_many` sends the exact searches in one pipeline; a scope wider than
    `EXACT_MAX` goes through the HNSW index. Each answer is the one-query answer."""
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    try:
        await store.write(rows_for(4, 15, CONFORMANCE_SPEC.dimension), [])
        monkeypatch.setattr(_pg_sql, "EXACT_MAX", 20)  # ns-* (15 rows) exact, all rows not
        rng = np.random.default_rng(9)
        queries = [
            (_pg_sql.vector_literal(unit(rng, 4)), RowFilter(namespaces=(f"ns-{n:02d}",)))
            for n in range(4)
        ] + [(_pg_sql.vector_literal(unit(rng, 4)), RowFilter())]
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            together = await _pg_sql.knn_many(conn, queries, 5)
            alone = [await _pg_sql.knn(conn, q, where, 5) for q, where in queries]
        assert together == alone
        assert all(len(hits) == 5 for hits in together)
    finally:
        await store.close()


async def graph_and_fresh(url: str) -> tuple[int, int]:
    ((graph, fresh),) = await run(
        url,
        "SELECT count(*) FILTER (WHERE NOT fresh), count(*) FILTER (WHERE fresh) FROM row_vectors",
    )
    return int(graph), int(fresh)


async def test_written_vectors_join_the_graph_off_the_write_path(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write keeps its vectors out of the HNSW graph (`fresh`); a wide search finds them
    all the same (searched exactly), before and after `settle` puts them in the graph, and
    the graph's part of the search is the HNSW index."""
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    try:
        writes = rows_for(2, 30, CONFORMANCE_SPEC.dimension)
        await store.write(writes, [])
        assert await graph_and_fresh(pg_url) == (0, 60)
        monkeypatch.setattr(_pg_sql, "EXACT_MAX", 0)  # every search through the graph path
        q, where = vec(1, 0.3, 0.2, 0), RowFilter(namespaces=("ns-01",))
        before = await store.vector_search(q, where, limit=5)
        assert len(before) == 5
        settled = await PostgresAdmin(pg_url, tools=None).settle(batch=7)
        assert settled == 60 and await graph_and_fresh(pg_url) == (60, 0)
        after = await store.vector_search(q, where, limit=5)
        assert [h.row_id for h in after] == [h.row_id for h in before]
        await run(pg_url, "SET enable_seqscan = off")
        nodes = await plan(
            pg_url,
            "SELECT id FROM row_vectors v WHERE NOT v.fresh"
            " ORDER BY v.embedding <=> %(q)s::vector LIMIT 5",
            {"q": _pg_sql.vector_literal(q)},
        )
        assert any(n.get("Index Name") == "row_vectors_hnsw" for n in nodes)
    finally:
        await store.close()


async def test_where_nothing_settles_writes_keep_the_fresh_set_bounded(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    try:
        monkeypatch.setattr(_pg_write, "FRESH_MAX", 10)
        writes = rows_for(1, 40, CONFORMANCE_SPEC.dimension)
        for start in range(0, 40, 8):
            await store.write(writes[start : start + 8], [])
        graph, fresh = await graph_and_fresh(pg_url)
        assert graph + fresh == 40 and fresh <= 10 + 8
        assert graph > 0
    finally:
        await store.close()


async def test_clustering_again_puts_rows_written_later_in_namespace_order(pg_url: str) -> None:
    """Rows written after a bulk load land wherever there is room; `PostgresAdmin.cluster`
    rewrites them in namespace order (and leaves the HNSW index in place)."""
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    try:
        await store.write(rows_for(6, 20, CONFORMANCE_SPEC.dimension), [])
        order = [ns for (ns,) in await run(pg_url, "SELECT namespace FROM rows ORDER BY ctid")]
        assert order != sorted(order)  # interleaved as written
        await PostgresAdmin(pg_url, tools=None).cluster()
        order = [ns for (ns,) in await run(pg_url, "SELECT namespace FROM rows ORDER BY ctid")]
        assert order == sorted(order) and len(order) == 120
        (hnsw,) = await run(pg_url, "SELECT to_regclass('row_vectors_hnsw') IS NOT NULL")
        assert hnsw == (True,)
        hits = await store.vector_search(vec(1, 0, 0, 0), RowFilter(namespaces=("ns-02",)), limit=3)
        assert len(hits) == 3
    finally:
        await store.close()
