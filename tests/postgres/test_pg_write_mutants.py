"""The PostgreSQL store's write SQL (`_pg_write`), where the conformance suite leaves a
one-line break unseen: the id a refusal names, a thread that is not text, the time an
edge is stamped with on a server in another time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from phi.errors import RowNotFound
from phi.memory.model import Edge
from phi.memory.store import PostgresStore, RowFilter
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
