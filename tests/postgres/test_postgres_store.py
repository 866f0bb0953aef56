"""The PostgreSQL store: the conformance suite, plus what only a shared server can do."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import psycopg
import pytest

from phi.errors import StoreError
from phi.memory.store import (
    PostgresStore,
    RowFilter,
    SQLiteStore,
    Store,
    _pg_forget,
    _pg_sql,
    open_store,
)
from tests.memory.conformance import CONFORMANCE_SPEC, StoreConformance, make_row, vec, w
from tests.postgres.schemas import in_schema, server_url

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[Store]:
    opened = PostgresStore(pg_url)
    await opened.connect()
    await opened.bind_embedding(CONFORMANCE_SPEC)
    yield opened
    await opened.close()


class TestPostgresConformance(StoreConformance):
    pass


async def test_open_store_selects_postgres_by_url(pg_url: str) -> None:
    assert isinstance(open_store(pg_url), PostgresStore)
    assert isinstance(open_store("postgres://u@h/db"), PostgresStore)
    with pytest.raises(StoreError, match="'mysql'"):
        open_store("mysql://u@h/db")


async def test_unreachable_server_is_a_store_error() -> None:
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=1")
    with pytest.raises(StoreError, match="cannot open the PostgreSQL store"):
        await store.connect()


async def test_a_search_path_naming_a_missing_schema_is_refused_and_creates_nothing(
    pg_url: str,
) -> None:
    # Without the check, PostgreSQL falls through to the next schema on the path and the
    # store's tables and rows land there, silently. The next schema here is a fresh one of
    # this test's (not public, shared by every test): a broken check fills only that.
    missing = f"t_missing_{uuid.uuid4().hex[:12]}"
    fallback = dict(parse_qsl(urlsplit(pg_url).query))["options"].split("=")[1].split(",")[0]
    url = in_schema(server_url(), f"{missing},{fallback}")
    store = PostgresStore(url)
    with pytest.raises(StoreError) as raised:
        await store.connect()
    assert str(raised.value) == (
        f"schema {missing!r}, first on the search path of {store.location!r}, does not"
        f" exist; create it (CREATE SCHEMA {missing}) or fix the URL's search_path"
    )
    async with await psycopg.AsyncConnection.connect(server_url(), autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_class WHERE relnamespace = %s::regnamespace", (fallback,)
        )
        assert await cur.fetchone() == (0,)


async def test_bm25_matches_the_sqlite_store(pg_url: str, tmp_path: Path) -> None:
    texts = [
        "Crows are clever birds; a crow remembers faces.",
        "I adopted a crow, crows everywhere!",
        "Running naïve café tests at://did:plc:x/1 and running again",
        "stock markets fell; the market recovered",
        "crows crows crows",
        "tea with ravens and crows at the café",
    ]
    terms = ["crows", "cafe", "running", "market", "ravens", "crows"]
    scores = []
    for store in (SQLiteStore(tmp_path / "s.db"), PostgresStore(pg_url)):
        await store.connect()
        await store.bind_embedding(CONFORMANCE_SPEC)
        rows = [make_row(t, namespace=f"ns-{i % 2}") for i, t in enumerate(texts)]
        await store.write([w(r, vec(1, 0, 0, i + 1)) for i, r in enumerate(rows)], [])
        await store.forget("ns-1")  # statistics must follow deletions too
        scoped = await store.text_search(terms, RowFilter(namespaces=("ns-0",)), limit=10)
        wide = await store.text_search(terms, RowFilter(), limit=10)
        contents = {r.row_id: r.content for r in await store.get_rows([h.row_id for h in wide])}
        scores.append(
            (
                [(contents[h.row_id], round(h.score, 6)) for h in scoped],
                [(contents[h.row_id], round(h.score, 6)) for h in wide],
            )
        )
        await store.close()
    sqlite, postgres = scores
    assert postgres == sqlite and len(sqlite[0]) == 3


async def test_close_releases_every_connection(pg_url: str) -> None:
    name = f"phi-close-{uuid.uuid4().hex[:8]}"
    url = f"{pg_url}&application_name={name}"

    async def connections() -> int:
        async with await psycopg.AsyncConnection.connect(server_url(), autocommit=True) as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            )
            (n,) = await cur.fetchone() or (0,)
            return int(n)

    for _ in range(3):  # connect / close cycles leak nothing
        store = PostgresStore(url)
        await store.connect()
        await store.bind_embedding(CONFORMANCE_SPEC)
        results = await asyncio.gather(*(store.count(RowFilter()) for _ in range(8)))
        assert results == [0] * 8 and await connections() >= 1
        await store.close()
        assert await connections() == 0


async def test_forget_failing_midway_leaves_the_namespace_whole(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [make_row(f"crows note {i}") for i in range(3)]
    await store.write([w(r, vec(1, i, 0, 0), ("ref",)) for i, r in enumerate(rows)], [])
    before = await store.text_search(["crows"], RowFilter(), limit=5)
    real = _pg_forget.erase

    async def crash_after_erasing(*args: Any, **kwargs: Any) -> Any:
        await real(*args, **kwargs)
        raise RuntimeError("crash after the deletes, before the commit")

    monkeypatch.setattr(_pg_forget, "erase", crash_after_erasing)
    with pytest.raises(RuntimeError, match="before the commit"):
        await store.forget("ns-a")
    monkeypatch.undo()
    assert len(await store.get_rows([r.row_id for r in rows])) == 3
    assert await store.ref_counts(["ref"]) == {"ref": 3}
    assert await store.text_search(["crows"], RowFilter(), limit=5) == before


async def test_driver_errors_surface_as_store_errors(store: Store, pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP TABLE edges")  # a damaged store
    row = make_row("a")
    await store.write([w(row, vec(1, 0, 0, 0))], [])
    with pytest.raises(StoreError, match="edges"):
        await store.edges([row.row_id])


async def test_the_hnsw_path_keeps_filters_and_order(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(3)
    rows = [make_row(f"r{i}", namespace=f"ns-{i % 10}") for i in range(200)]
    vectors = [vec(*rng.standard_normal(4)) for _ in rows]
    await store.write([w(r, v) for r, v in zip(rows, vectors, strict=True)], [])
    q, scope = vec(1, 0.5, 0, 0), RowFilter(namespaces=("ns-3",))
    exact = await store.vector_search(q, scope, limit=5)
    monkeypatch.setattr(_pg_sql, "EXACT_MAX", 0)  # every query through the index
    indexed = await store.vector_search(q, scope, limit=5)
    assert [h.row_id for h in indexed] == [h.row_id for h in exact]
    assert all(r.namespace == "ns-3" for r in await store.get_rows([h.row_id for h in indexed]))


async def test_rows_without_a_vector_before_migration_3_are_queued(pg_url: str) -> None:
    """A store from before the queue table kept its waiting rows as rows without a vector:
    the migration queues exactly those, and the embedder and the counts find them."""
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    embedded = make_row("has a vector")
    waiting = [make_row("a waits"), make_row("b waits", namespace="ns-b")]
    await store.write([w(embedded, vec(1, 0, 0, 0)), *(w(r, None) for r in waiting)], [])
    await store.close()
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP TABLE embed_queue")
        await conn.execute("ALTER TABLE rows DROP COLUMN written_by")
        await conn.execute(
            "DELETE FROM phi_migrations WHERE name IN ('m003_embed_queue', 'm004_written_by')"
        )
    store = PostgresStore(pg_url, auto_upgrade=True)  # PostgreSQL upgrades only when told
    await store.connect()
    try:
        assert await store.count_unembedded(RowFilter(namespaces=("ns-a",))) == 1
        assert await store.count_unembedded(RowFilter(namespaces=("ns-b",))) == 1
        assert await store.unembedded(limit=5) == waiting
    finally:
        await store.close()
