"""Migrations of the PostgreSQL store (`_pg_schema`): what they report, two processes
migrating one fresh store at once, and the memory an HNSW build is given."""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from itertools import pairwise

import anyio
import anyio.abc
import anyio.streams.text
import numpy as np
import psycopg
import pytest

from phi.memory.model import Edge
from phi.memory.store import EmbeddingSpec, PostgresStore, RowFilter, _pg_schema
from phi.memory.store._pg_schema import (
    BUILD_MEMORY_MAX,
    apply_migrations,
    build_memory,
    create_vector_index,
)
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, w
from tests.postgres.test_pg_locality import WIDE, rows_for, run

pytestmark = pytest.mark.anyio

MIGRATOR = textwrap.dedent(
    """
    import json, sys, anyio, psycopg
    from phi.memory.store._pg_schema import apply_migrations

    async def main():
        async with await psycopg.AsyncConnection.connect(sys.argv[1], autocommit=True) as conn:
            print("ready", flush=True)
            sys.stdin.readline()
            print(json.dumps(await apply_migrations(conn)), flush=True)

    anyio.run(main)
    """
)


async def _line(stream: anyio.streams.text.TextReceiveStream) -> str:
    text = ""
    with anyio.fail_after(60):
        while "\n" not in text:
            text += await stream.receive()
    return text.strip()


async def test_two_processes_migrating_one_fresh_store_apply_each_migration_once(
    pg_url: str,
) -> None:
    """Each process reports what it applied: between them, every migration exactly once
    (a third finds nothing left); neither fails on the other's tables."""
    names = [name for name, _ in _pg_schema._MIGRATIONS]
    assert names[:3] == ["m001_initial", "m002_learning", "m003_embed_queue"]
    procs: list[anyio.abc.Process] = []
    try:
        for _ in range(2):
            procs.append(await anyio.open_process([sys.executable, "-c", MIGRATOR, pg_url]))
        outs = []
        for proc in procs:
            assert proc.stdout is not None
            outs.append(anyio.streams.text.TextReceiveStream(proc.stdout))
        assert [await _line(out) for out in outs] == ["ready", "ready"]
        for proc in procs:
            assert proc.stdin is not None
            await proc.stdin.send(b"go\n")
        applied = [json.loads(await _line(out)) for out in outs]
        with anyio.fail_after(30):
            assert [await proc.wait() for proc in procs] == [0, 0]
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.aclose()
    assert sorted(applied[0] + applied[1]) == sorted(names)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await apply_migrations(conn) == []
        cur = await conn.execute("SELECT name FROM phi_migrations ORDER BY name")
        assert [name for (name,) in await cur.fetchall()] == sorted(names)


async def test_migrating_a_fresh_store_reports_each_migration_in_order(pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await apply_migrations(conn) == [name for name, _ in _pg_schema._MIGRATIONS]
        assert await apply_migrations(conn) == []


def test_an_hnsw_build_asks_for_what_its_graph_needs_up_to_a_cap() -> None:
    # 4 bytes a dimension plus ~720 of graph, and a quarter more.
    assert build_memory(1000, 384) == 2_820_000
    assert build_memory(7447, 4) == int(7447 * 736 * 1.25)
    assert build_memory(0, 384) == 0
    assert build_memory(10_000_000, 384) == BUILD_MEMORY_MAX == 4 << 30


async def test_the_index_build_raises_maintenance_work_mem_for_its_transaction_only(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    await store.connect()
    try:
        await store.bind_embedding(CONFORMANCE_SPEC)
        rows = [make_row(f"row {i}") for i in range(2000)]
        rng = np.random.default_rng(5)
        vectors = rng.standard_normal((2000, 4)).astype("float32")
        await store.write([w(r, v) for r, v in zip(rows, vectors, strict=True)], [])
    finally:
        await store.close()
    wanted = build_memory(2000, 4)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("SET maintenance_work_mem = '1MB'")
        async with conn.transaction():
            await conn.execute("DROP INDEX row_vectors_hnsw")
            await create_vector_index(conn)
            cur = await conn.execute("SHOW maintenance_work_mem")
            assert await cur.fetchone() == (f"{wanted // 1024}kB",)
        cur = await conn.execute("SHOW maintenance_work_mem")
        assert await cur.fetchone() == ("1MB",)
        cur = await conn.execute("SELECT to_regclass('row_vectors_hnsw') IS NOT NULL")
        assert await cur.fetchone() == (True,)
        # Enough memory already: the setting is left as it is.
        await conn.execute("SET maintenance_work_mem = '64MB'")
        async with conn.transaction():
            await conn.execute("DROP INDEX row_vectors_hnsw")
            await create_vector_index(conn)
            cur = await conn.execute("SHOW maintenance_work_mem")
            assert await cur.fetchone() == ("64MB",)


@pytest.mark.parametrize(
    ("path", "missing"),
    [
        ('"$user", public', None),  # PostgreSQL's default: the role's schema passed over
        ("$user, public", None),
        ("public, t_pg_no_such", None),  # only the first real entry counts
        ('"$user", t_pg_no_such, public', "t_pg_no_such"),
        ("T_PG_No_Such, public", "t_pg_no_such"),  # unquoted: folded to lower case
        ('"T_PG ""No"" Such", public', 'T_PG "No" Such'),  # quoted: as written, "" is "
        ('"public"', None),
        ("", None),  # nothing named at all
        ('""', ""),  # `SET search_path = ''`: a schema of no name, which cannot exist
    ],
)
async def test_the_first_schema_named_on_the_search_path_must_exist(
    pg_url: str, path: str, missing: str | None
) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("SELECT set_config('search_path', %s, false)", (path,))
        assert await _pg_schema.missing_schema(conn) == missing


async def test_a_quoted_schema_that_exists_is_found_by_its_exact_name(pg_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    quoted = f'"T_PG ""Quoted"" {tag}"'
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {quoted}")
        try:
            await conn.execute(f"SET search_path = {quoted}, public")
            assert await _pg_schema.missing_schema(conn) is None
            await conn.execute(f"SET search_path = t_pg_quoted_{tag}, public")
            assert await _pg_schema.missing_schema(conn) == f"t_pg_quoted_{tag}"
        finally:
            await conn.execute(f"DROP SCHEMA {quoted}")


def test_vectors_up_to_460_dimensions_are_kept_in_the_namespace_index() -> None:
    """pgvector's 8-byte header and 4 bytes a dimension, within 1,850 bytes: 1,848 at 460."""
    assert _pg_schema.vector_in_index(460)
    assert not _pg_schema.vector_in_index(461)
    assert _pg_schema.vector_in_index(1)


# -- the namespace layout (migration 5) ------------------------------------------------------


async def _store_with(url: str, spec: EmbeddingSpec, namespaces: int, each: int) -> None:
    store = PostgresStore(url)
    await store.connect()
    try:
        await store.bind_embedding(spec)
        await store.write(rows_for(namespaces, each, spec.dimension), [])
    finally:
        await store.close()


async def test_a_wide_store_from_before_migration_5_keeps_its_vectors_out_of_the_index(
    pg_url: str,
) -> None:
    """A 1,536-d vector does not fit a B-tree entry: upgraded in place, the namespace index
    of a wide store holds its keys alone (a 4-d store's holds the vectors too)."""
    await _store_with(pg_url, WIDE, 2, 3)
    await run(
        pg_url,
        "CREATE TABLE rv_keep AS SELECT id, embedding FROM row_vectors",
        "DROP TABLE row_vectors",
        "CREATE TABLE row_vectors (id bigint PRIMARY KEY REFERENCES rows (id) ON DELETE"
        " CASCADE, embedding vector(1536) NOT NULL)",
        "INSERT INTO row_vectors SELECT id, embedding FROM rv_keep ORDER BY id DESC",
        "DROP TABLE rv_keep",
        "DELETE FROM phi_migrations WHERE name = 'm005_namespace_locality'",
    )
    store = PostgresStore(pg_url, auto_upgrade=True)
    await store.connect()
    try:
        assert await run(pg_url, _INDEX_COLUMNS) == [(2, 2)]
        assert await run(pg_url, "SELECT count(namespace) FROM row_vectors") == [(6,)]
        hits = await store.vector_search(
            rows_for(2, 3, WIDE.dimension)[1].vector,  # type: ignore[arg-type]
            RowFilter(namespaces=("ns-01",)),
            limit=5,
        )
        assert len(hits) == 3 and hits[0].score > 0.99
    finally:
        await store.close()


_INDEX_COLUMNS = (
    "SELECT i.indnatts, i.indnkeyatts FROM pg_index i"
    " WHERE i.indexrelid = to_regclass('row_vectors_scope')"
)
"""All columns of the namespace index, and its key columns (more: it holds the vectors)."""


async def test_laying_out_a_current_table_again_leaves_it_as_it_is(pg_url: str) -> None:
    """A re-embedding's swap and every open call `create_vector_table` on a table of the
    current layout: it must not be rebuilt (fresh vectors would silently join nothing)."""
    await _store_with(pg_url, CONFORMANCE_SPEC, 2, 5)
    assert await run(pg_url, _INDEX_COLUMNS) == [(3, 2)]
    before = await run(
        pg_url,
        "SELECT 'row_vectors'::regclass::oid, count(*) FILTER (WHERE fresh) FROM row_vectors",
    )
    assert before[0][1] == 10
    async with (
        await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn,
        conn.transaction(),
    ):
        await _pg_schema.create_vector_table(conn, CONFORMANCE_SPEC.dimension)
    after = await run(
        pg_url,
        "SELECT 'row_vectors'::regclass::oid, count(*) FILTER (WHERE fresh) FROM row_vectors",
    )
    assert after == before


async def test_clustering_without_a_graph_puts_the_vectors_in_namespace_order_too(
    pg_url: str,
) -> None:
    """Before the HNSW index exists (a bulk load builds it last), the table of vectors is
    rewritten in namespace order as well, so the build reads it that way."""
    await _store_with(pg_url, CONFORMANCE_SPEC, 4, 6)
    order_sql = "SELECT namespace FROM row_vectors ORDER BY ctid"
    assert [ns for (ns,) in await run(pg_url, order_sql)] != sorted(
        ns for (ns,) in await run(pg_url, order_sql)
    )
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP INDEX row_vectors_hnsw")
        async with conn.transaction():
            await _pg_schema.cluster(conn)
    order = [ns for (ns,) in await run(pg_url, order_sql)]
    assert order == sorted(order) and len(order) == 24


async def test_vacuum_marks_the_pages_of_every_scoped_table_all_visible(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    await store.connect()
    try:
        await store.bind_embedding(CONFORMANCE_SPEC)
        writes = rows_for(2, 10, CONFORMANCE_SPEC.dimension)
        chain = [
            Edge(src=a.row.row_id, dst=b.row.row_id, edge_type="temporal")
            for a, b in pairwise(writes)
        ]
        await store.write(writes, chain)
    finally:
        await store.close()
    visible = (
        "SELECT relname, relallvisible > 0 FROM pg_class WHERE oid IN ("
        "'rows'::regclass, 'row_vectors'::regclass, 'row_terms'::regclass, 'edges'::regclass)"
        " ORDER BY relname"
    )
    assert all(not seen for _, seen in await run(pg_url, visible))
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await _pg_schema.vacuum(conn)
    assert await run(pg_url, visible) == [
        ("edges", True),
        ("row_terms", True),
        ("row_vectors", True),
        ("rows", True),
    ]
