"""The PostgreSQL store's write SQL (`_pg_write`), where the conformance suite leaves a
one-line break unseen: the id a refusal names, a thread that is not text, the time an
edge is stamped with on a server in another time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from phi.errors import RowNotFound
from phi.memory.model import Edge
from phi.memory.store import PostgresStore, RowFilter, RowWrite, _pg_write
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w
from tests.postgres.schemas import in_time_zone

pytestmark = pytest.mark.anyio


async def test_an_edge_to_a_missing_row_names_that_row(pg_store: PostgresStore) -> None:
    row = make_row("here")
    with pytest.raises(RowNotFound) as raised:
        await pg_store.write(
            [w(row, vec(1, 0, 0, 0))], [Edge(src=row.row_id, dst="gone", edge_type="causal")]
        )
    assert (raised.value.row_id, str(raised.value)) == ("gone", "no memory row with id 'gone'")
    await pg_store.write([w(row, vec(1, 0, 0, 0))], [])
    with pytest.raises(RowNotFound) as raised:
        await pg_store.add_edges([Edge(src="lost", dst=row.row_id, edge_type="causal")])
    assert raised.value.row_id == "lost"


async def test_superseding_a_missing_row_names_it_and_changes_nothing(
    pg_store: PostgresStore,
) -> None:
    row = make_row("kept")
    await pg_store.write([w(row, vec(1, 0, 0, 0))], [])
    with pytest.raises(RowNotFound) as raised:
        await pg_store.set_status([row.row_id, "gone"], "superseded", at=datetime.now(UTC))
    assert raised.value.row_id == "gone"
    assert [r.status for r in await pg_store.get_rows([row.row_id])] == ["active"]


async def test_a_thread_that_is_not_text_is_no_thread(pg_store: PostgresStore) -> None:
    """`meta["thread"]` names a conversation only as a string; anything else stays in the
    row's meta, and no thread filter finds the row by it."""
    odd, real = make_row("odd", meta={"thread": 7}), make_row("real", meta={"thread": "7"})
    await pg_store.write([w(odd, vec(1, 0, 0, 0)), w(real, vec(0, 1, 0, 0))], [])
    assert await pg_store.latest(RowFilter(thread="7"), limit=5) == [real]
    assert await pg_store.get_rows([odd.row_id]) == [odd]


async def test_an_edge_without_a_time_is_stamped_now_in_any_server_time_zone(
    pg_url: str,
) -> None:
    store = PostgresStore(in_time_zone(pg_url, "Pacific/Kiritimati"))  # UTC+14
    await store.connect()
    try:
        await store.bind_embedding(CONFORMANCE_SPEC)
        a, b = make_row("a"), make_row("b")
        before = datetime.now(UTC)
        await store.write(
            [w(a, vec(1, 0, 0, 0)), w(b, vec(0, 1, 0, 0))],
            [Edge(src=a.row_id, dst=b.row_id, edge_type="temporal")],
        )
        after = datetime.now(UTC)
        (edge,) = await store.edges([a.row_id])
    finally:
        await store.close()
    assert edge.created_at is not None
    assert before - timedelta(seconds=1) <= edge.created_at <= after + timedelta(seconds=1)


async def _graph_and_fresh(url: str) -> tuple[int, int]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FILTER (WHERE NOT fresh), count(*) FILTER (WHERE fresh)"
            " FROM row_vectors"
        )
        graph, fresh = await cur.fetchone() or (0, 0)
    return int(graph), int(fresh)


def _rows(start: int, count: int) -> list[RowWrite]:
    return [
        w(make_row(f"bound {i}", at=i), vec(1, i / 100, 0, 0)) for i in range(start, start + count)
    ]


async def test_writes_settle_as_many_as_they_add_only_past_the_bound(
    pg_store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to `FRESH_MAX` fresh vectors, a write leaves its own out of the graph; past it,
    the write puts as many as it added into the graph (oldest first): the set stays at the
    bound, and what each write pays stays its own size."""
    monkeypatch.setattr(_pg_write, "FRESH_MAX", 10)
    await pg_store.write(_rows(0, 10), [])
    assert await _graph_and_fresh(pg_url) == (0, 10)  # at the bound, not past it
    await pg_store.write(_rows(10, 3), [])
    assert await _graph_and_fresh(pg_url) == (3, 10)
    await pg_store.write(_rows(13, 1), [])
    assert await _graph_and_fresh(pg_url) == (4, 10)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute("SELECT min(id) FROM row_vectors WHERE fresh")
        (oldest_fresh,) = await cur.fetchone() or (None,)
        cur = await conn.execute("SELECT max(id) FROM row_vectors WHERE NOT fresh")
        (newest_settled,) = await cur.fetchone() or (None,)
    assert newest_settled is not None and oldest_fresh is not None
    assert newest_settled < oldest_fresh, "the oldest fresh vectors are settled first"


async def test_without_a_graph_a_write_puts_its_vectors_where_the_build_will_find_them(
    pg_store: PostgresStore, pg_url: str
) -> None:
    """During a bulk load there is no HNSW index yet (it is built at the end over every
    vector that is not fresh): a vector written then must not be left out as fresh."""
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP INDEX row_vectors_hnsw")
    await pg_store.write(_rows(0, 4), [])
    assert await _graph_and_fresh(pg_url) == (4, 0)
