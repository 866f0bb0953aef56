"""The PostgreSQL store's recall in few round trips (issue 27): each shortcut answers what
the step-by-step definition answers, on the paths a small store does not take by itself
(rows of other statuses among the nearest, more text matches than the first trip reads,
the HNSW index instead of an exact search), and the session settings it changes for its
statements are set back, after a failure too."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from phi.errors import StoreError
from phi.memory.model import Edge
from phi.memory.store import PostgresStore, RowFilter, _pg_hybrid, _pg_sql
from phi.memory.store._pg_schema import Conn
from phi.memory.store.base import HybridQuery, HybridSignals, gather_stepwise
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w

pytestmark = pytest.mark.anyio


async def chain(store: PostgresStore, n: int = 12) -> list[str]:
    """`n` rows of namespace ns-a about crows or tea, each linked to the one before (and
    one row of ns-b linked to the fourth); their ids in order."""
    rows = [
        make_row(f"turn {i} about {'crows' if i % 3 == 0 else 'tea'} and crows", at=i)
        for i in range(n)
    ]
    other = make_row("crows elsewhere", namespace="ns-b")
    edges = [Edge(src=a.row_id, dst=b.row_id, edge_type="temporal") for a, b in pairwise(rows)]
    edges.append(Edge(src=rows[4].row_id, dst=other.row_id, edge_type="temporal"))
    vectors = [vec(1, i / n, (i % 3) / 3, 0.1) for i in range(n)]
    await store.write(
        [*(w(r, v) for r, v in zip(rows, vectors, strict=True)), w(other, vec(1, 0, 0, 0))],
        edges,
    )
    return [r.row_id for r in rows]


def query(
    *, candidates: int = 3, hops: int = 2, namespaces: tuple[str, ...] = ("ns-a",)
) -> HybridQuery:
    return HybridQuery(
        vector=vec(1, 0.5, 0, 0.1),
        terms=("crows",),
        where=RowFilter(namespaces=namespaces),
        candidates=candidates,
        graph_types=("temporal",),
        hops=hops,
        seeds=lambda dense, text: [h.row_id for h in [*dense, *text]][:2],
    )


def same(fast: HybridSignals, slow: HybridSignals) -> None:
    assert (fast.from_dense, fast.from_text) == (slow.from_dense, slow.from_text)
    for got, want in ((fast.dense, slow.dense), (fast.text, slow.text)):
        assert {h.row_id: round(h.score, 5) for h in got} == {
            h.row_id: round(h.score, 5) for h in want
        }
    assert {k: sorted(v) for k, v in fast.adjacency.items()} == {
        k: sorted(v) for k, v in slow.adjacency.items()
    }
    assert (fast.contents, fast.threads, fast.unembedded) == (
        slow.contents,
        slow.threads,
        slow.unembedded,
    )


@pytest.mark.parametrize("hops", [1, 2, 3])
async def test_the_two_trips_agree_with_the_steps(pg_store: PostgresStore, hops: int) -> None:
    await chain(pg_store)
    q = query(hops=hops)
    fast, slow = await pg_store.hybrid(q), await gather_stepwise(pg_store, q)
    same(fast, slow)
    assert len(fast.dense) > len(fast.from_dense)  # the walk reached rows no one proposed


async def test_more_text_matches_than_the_first_trip_reads(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the first trip could not read every match, the walk scores the rows it
    reached itself: the same scores."""
    await chain(pg_store)
    q = query()
    complete = await pg_store.hybrid(q)
    monkeypatch.setattr(_pg_hybrid, "TEXT_ALL", 1)
    partial = await pg_store.hybrid(q)
    same(partial, await gather_stepwise(pg_store, q))
    same(partial, complete)
    assert len(partial.text) > len(partial.from_text)  # reached rows scored by the walk


async def test_through_the_hnsw_index(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scope too wide for the exact search: the dense hits come from the index, without
    their keys or content, which the walk and the answer then read."""
    await chain(pg_store)
    monkeypatch.setattr(_pg_sql, "EXACT_MAX", 0)
    q = query()
    fast = await pg_store.hybrid(q)
    same(fast, await gather_stepwise(pg_store, q))
    assert fast.from_dense and set(fast.from_dense) <= set(fast.contents)


async def test_the_nearest_active_rows_past_superseded_ones(pg_store: PostgresStore) -> None:
    """The vectors-first search looks rows up in order of similarity until `k` pass the
    status: the nearest rows being superseded does not shorten or reorder the answer."""
    rng = np.random.default_rng(3)
    rows = [
        make_row(f"row {i}", status="superseded" if i < 6 else "active", at=i) for i in range(20)
    ]
    target = vec(1, 0, 0, 0)
    vectors = [target + 0.01 * i * rng.standard_normal(4).astype(np.float32) for i in range(20)]
    vectors = [v / np.linalg.norm(v) for v in vectors]
    await pg_store.write([w(r, v) for r, v in zip(rows, vectors, strict=True)], [])
    where = RowFilter(namespaces=("ns-a",))
    assert _pg_sql.nearest_first(where)
    scores = {r.row_id: float(v @ target) for r, v in zip(rows, vectors, strict=True)}
    active = sorted((r.row_id for r in rows if r.status == "active"), key=lambda i: -scores[i])
    hits = await pg_store.vector_search(target, where, limit=5)
    assert [h.row_id for h in hits] == active[:5]
    every = await pg_store.vector_search(
        target, RowFilter(namespaces=("ns-a",), statuses=None), limit=5
    )
    assert [h.row_id for h in every] == sorted(scores, key=lambda i: -scores[i])[:5]
    assert await pg_store.vector_search(target, where, limit=50) == await pg_store.vector_search(
        target, where, limit=14
    )


async def test_latest_of_many_scopes_batched_or_not(pg_store: PostgresStore) -> None:
    """Namespace-before-a-time filters go in one statement, the rest one each: every
    answer is the one-filter answer, in the order asked."""
    rows = [
        make_row(f"r{i}", namespace=f"ns-{i % 3}", at=i, meta={"thread": f"t{i % 2}"})
        for i in range(12)
    ]
    await pg_store.write([w(r, vec(1, 0, 0, i + 1)) for i, r in enumerate(rows)], [])
    before = make_row("x", at=7).created_at
    wheres = [
        RowFilter(namespaces=("ns-1",), statuses=None, until=before),
        RowFilter(thread="t0"),
        RowFilter(namespaces=("ns-2",), statuses=None, until=before),
        RowFilter(namespaces=("ns-0",)),
        RowFilter(namespaces=("ns-9",), statuses=None, until=before),
        RowFilter(namespaces=("ns-0",), statuses=None, until=before),
    ]
    many = await pg_store.latest_many(wheres, limit=2)
    alone = [await pg_store.latest(where, limit=2) for where in wheres]
    assert many == alone
    assert [[r.content for r in found] for found in many] == [
        ["r4", "r1"],
        ["r10", "r8"],
        ["r5", "r2"],
        ["r9", "r6"],
        [],
        ["r6", "r3"],
    ]


async def plan_setting(store: PostgresStore) -> list[str]:
    async def show(conn: Conn) -> str:
        cur = await conn.execute("SHOW plan_cache_mode")
        (mode,) = await cur.fetchone() or ("",)
        return str(mode)

    return [await store._read(show) for _ in range(3)]


async def test_plan_settings_are_set_back(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generic plans are asked for around the text step, the walk and many nearest
    searches, and set back after them, after a failed walk too."""
    store = PostgresStore(pg_url, pool_max=1)  # one connection: the one that ran them
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    try:
        await chain(store)
        await store.hybrid(query())
        assert await plan_setting(store) == ["auto"] * 3
        await store.hybrid(query(hops=0))  # the first trip alone
        assert await plan_setting(store) == ["auto"] * 3
        await store.vector_search_many(
            [(vec(1, 0, 0, 0), RowFilter(namespaces=("ns-a",)))], limit=3
        )
        assert await plan_setting(store) == ["auto"] * 3
        broken = _pg_hybrid._walk_sql

        def failing(q: HybridQuery, text: bool) -> tuple[str, dict[str, Any]]:
            statement, params = broken(q, text)
            return statement + " ORDER BY no_such_column", params

        monkeypatch.setattr(_pg_hybrid, "_walk_sql", failing)
        with pytest.raises(StoreError, match="no_such_column"):
            await store.hybrid(query())
        assert await plan_setting(store) == ["auto"] * 3
    finally:
        await store.close()


async def test_a_scope_without_vectors_answers_nothing(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A guarded exact search that answered nothing has its scope counted: a small scope
    whose rows all wait for their vectors answers nothing (not the index's neighbours
    from elsewhere), a wide one goes to the index."""
    await chain(pg_store)
    waiting = [make_row(f"later {i}", namespace="ns-z", at=i) for i in range(3)]
    await pg_store.write([w(r, None) for r in waiting], [])
    target = vec(1, 0, 0, 0)
    assert await pg_store.vector_search(target, RowFilter(namespaces=("ns-z",)), limit=3) == []
    assert len(await pg_store.vector_search(target, RowFilter(), limit=3)) == 3
    monkeypatch.setattr(_pg_sql, "EXACT_MAX", 2)  # ns-a (12 rows) is now too wide
    wide = await pg_store.vector_search(target, RowFilter(namespaces=("ns-a",)), limit=3)
    assert len(wide) == 3
    assert await pg_store.vector_search(target, RowFilter(namespaces=("ns-z",)), limit=3) == []
