"""The PostgreSQL store: the conformance suite, plus what only a shared server can do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from phi.errors import StoreError
from phi.memory.store import PostgresStore, RowFilter, SQLiteStore, Store, open_store
from tests.memory.conformance import CONFORMANCE_SPEC, StoreConformance, make_row, vec, w

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
