"""Work split over two of the pool's connections (`_pg_split`, `PostgresStore._spare`): the
same answers, in the same order, as one connection; the second connection only ever an
idle one; a failing half raises the store's own error."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import psycopg
import pytest

from phi.errors import StoreError
from phi.memory.store import PostgresStore, RowFilter, _pg_hybrid, _pg_split
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_sql import VectorParam, knn_many
from phi.memory.store._pg_text import query_tokens
from phi.memory.store.base import Hit, HybridSignals, gather_stepwise
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, w
from tests.postgres.schemas import fresh_schema
from tests.postgres.test_pg_hybrid_trips import chain, query, same

pytestmark = pytest.mark.anyio

QUERIES = _pg_split.SPLIT_FROM + 1


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(CONFORMANCE_SPEC.dimension).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.fixture
async def named_url() -> AsyncIterator[tuple[str, str]]:
    """A fresh schema's URL whose sessions carry an application name of their own."""
    name = f"phi-split-{uuid.uuid4().hex[:12]}"
    async with fresh_schema() as url:
        yield f"{url}&application_name={name}", name


async def filled(url: str, *, pool_max: int | None = None) -> PostgresStore:
    store = PostgresStore(url, pool_max=pool_max)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    rng = np.random.default_rng(9)
    await store.write(
        [
            w(make_row(f"row {i} of {n}", namespace=f"ns-{n}", at=i), unit(rng))
            for n in range(5)
            for i in range(12)
        ],
        [],
    )
    return store


def searches(count: int, seed: int = 3) -> list[tuple[np.ndarray, RowFilter]]:
    rng = np.random.default_rng(seed)
    # Each namespace in turn, so the two halves ask different scopes in different orders.
    return [(unit(rng), RowFilter(namespaces=(f"ns-{i % 5}",))) for i in range(count)]


async def one_connection(
    store: PostgresStore, queries: list[tuple[np.ndarray, RowFilter]]
) -> list[list[Hit]]:
    literals = [(store._query_vector(v), where) for v, where in queries]

    async def search(conn: Conn) -> list[list[Hit]]:
        return await knn_many(conn, literals, 4)

    return await store._read(search)


def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the `knn_many` calls `_pg_split` makes, in order."""
    sizes: list[int] = []

    async def recording(
        conn: Conn, queries: Sequence[tuple[VectorParam, RowFilter]], k: int
    ) -> list[list[Hit]]:
        sizes.append(len(queries))
        return await knn_many(conn, queries, k)

    monkeypatch.setattr(_pg_split, "knn_many", recording)
    return sizes


@pytest.mark.parametrize(
    ("pool_max", "count", "halves"),
    [
        (None, QUERIES, [64, 65]),
        (None, _pg_split.SPLIT_FROM, [64, 64]),
        (1, QUERIES, [QUERIES]),  # no second connection
    ],
)
async def test_many_searches_answer_as_one_connection_in_order(
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    pool_max: int | None,
    count: int,
    halves: list[int],
) -> None:
    store = await filled(pg_url, pool_max=pool_max)
    try:
        queries = searches(count)
        want = await one_connection(store, queries)
        sizes = counted(monkeypatch)
        got = await store.vector_search_many(queries, limit=4)
        assert sorted(sizes) == halves
        assert got == want
        assert len(got) == count and all(len(hits) == 4 for hits in got)
        for (_, where), hits in zip(queries, got, strict=True):
            rows = await store.get_rows([h.row_id for h in hits])
            assert {r.namespace for r in rows} == set(where.namespaces or ())
    finally:
        await store.close()


async def test_fewer_searches_than_the_split_take_one_connection(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await filled(pg_url)
    try:
        queries = searches(_pg_split.SPLIT_FROM - 1)
        sizes = counted(monkeypatch)
        got = await store.vector_search_many(queries, limit=4)
        assert sizes == []  # not through the split at all
        assert got == await one_connection(store, queries)
    finally:
        await store.close()


async def test_a_failing_half_raises_the_stores_error_not_a_group(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await filled(pg_url)
    calls: list[int] = []

    async def failing(
        conn: Conn, queries: Sequence[tuple[VectorParam, RowFilter]], k: int
    ) -> list[list[Hit]]:
        calls.append(len(queries))
        if len(calls) == 2:
            raise psycopg.OperationalError("the server went away")
        return await knn_many(conn, queries, k)

    monkeypatch.setattr(_pg_split, "knn_many", failing)
    try:
        with pytest.raises(StoreError, match="the server went away"):
            await store.vector_search_many(searches(QUERIES), limit=4)
        assert len(calls) == 2
        monkeypatch.undo()
        assert len(await store.vector_search_many(searches(QUERIES), limit=4)) == QUERIES
    finally:
        await store.close()


async def test_at_once_answers_both_in_order_and_raises_a_failure_itself() -> None:
    async def one() -> int:
        return 1

    async def two() -> str:
        return "two"

    assert await _pg_split.at_once(one, two) == (1, "two")

    async def broken() -> str:
        raise StoreError("half failed")

    with pytest.raises(StoreError, match="half failed"):
        await _pg_split.at_once(one, broken)


async def test_the_pool_keeps_two_sessions_open_within_its_bound(
    named_url: tuple[str, str],
) -> None:
    url, name = named_url
    for pool_max, sessions in ((None, 2), (1, 1)):
        store = PostgresStore(url, pool_max=pool_max)
        await store.connect()
        try:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                cur = await conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
                    " AND pid <> pg_backend_pid()",
                    (name,),
                )
                assert await cur.fetchone() == (sessions,)
        finally:
            await store.close()


async def test_the_spare_is_an_idle_connection_or_none(pg_url: str) -> None:
    store = PostgresStore(pg_url, pool_max=2)
    await store.connect()
    try:
        held: list[Conn | None] = []

        async def take(conn: Conn) -> None:
            async with store._spare() as beside:
                held.append(beside)
                assert beside is not None and beside is not conn
                async with store._spare() as third:  # both of the pool's two are taken
                    held.append(third)

        await store._read(take)
        assert held[1] is None
    finally:
        await store.close()
    lone = PostgresStore(pg_url, pool_max=1)
    await lone.connect()
    try:

        async def alone(conn: Conn) -> Conn | None:
            async with lone._spare() as beside:
                return beside

        assert await lone._read(alone) is None
    finally:
        await lone.close()


async def test_a_recall_asks_its_text_step_beside_and_answers_as_alone(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await chain(pg_store)
    q = query()
    vector = pg_store._query_vector(q.vector)
    tokens = query_tokens(pg_store._ready()[1], q.terms)
    alone: list[HybridSignals] = []

    async def by_itself(conn: Conn) -> None:
        alone.append(await _pg_hybrid.hybrid(conn, q, vector, tokens))

    await pg_store._read(by_itself)
    split: list[Any] = []
    real = _pg_split.at_once

    async def recording(
        first: Callable[[], Awaitable[Any]], second: Callable[[], Awaitable[Any]]
    ) -> tuple[Any, Any]:
        split.append((first, second))
        return await real(first, second)

    monkeypatch.setattr(_pg_hybrid, "at_once", recording)
    beside = await pg_store.hybrid(q)
    assert len(split) == 1  # the text step went to the second connection
    same(beside, alone[0])
    assert beside.from_text and beside.from_dense


async def test_a_recall_with_no_words_to_match_asks_on_one_connection(
    pg_store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No terms (a query of stopwords only has none): no text step, nothing to ask beside
    the exact search."""
    await chain(pg_store)
    q = replace(query(), terms=())
    assert query_tokens(pg_store._ready()[1], q.terms) == []
    split: list[object] = []

    async def recording(first: object, second: object) -> tuple[object, object]:
        split.append(first)
        raise AssertionError("nothing to ask beside")

    monkeypatch.setattr(_pg_hybrid, "at_once", recording)
    fast = await pg_store.hybrid(q)
    assert split == []
    same(fast, await gather_stepwise(pg_store, q))
    assert fast.from_dense and not fast.from_text
    assert fast.adjacency  # the walk ran from the dense seeds
