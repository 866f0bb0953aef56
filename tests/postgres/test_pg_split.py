"""Many nearest-neighbour searches split over two connections (`_pg_split`): the same
answers, in the same order, as one pipeline on one connection; a pool of one connection
still answers; a failing half raises the store's own error."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import numpy as np
import pytest

from phi.errors import StoreError
from phi.memory.store import PostgresStore, RowFilter, _pg_split
from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_sql import knn_many
from phi.memory.store.base import Hit
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, w

pytestmark = pytest.mark.anyio

QUERIES = 2 * _pg_split.SPLIT_FROM + 1


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(CONFORMANCE_SPEC.dimension).astype(np.float32)
    return v / np.linalg.norm(v)


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


def searches(seed: int) -> list[tuple[np.ndarray, RowFilter]]:
    rng = np.random.default_rng(seed)
    # Each namespace in turn, so the two halves ask different scopes in different orders.
    return [(unit(rng), RowFilter(namespaces=(f"ns-{i % 5}",))) for i in range(QUERIES)]


async def one_pipeline(
    store: PostgresStore, queries: list[tuple[np.ndarray, RowFilter]]
) -> list[list[Hit]]:
    literals = [(store._query_vector(v), where) for v, where in queries]

    async def search(conn: Conn) -> list[list[Hit]]:
        return await knn_many(conn, literals, 4)

    return await store._read(search)


@pytest.mark.parametrize("pool_max", [None, 1])
async def test_split_searches_answer_as_one_pipeline_in_order(
    pg_url: str, pool_max: int | None
) -> None:
    store = await filled(pg_url, pool_max=pool_max)
    try:
        queries = searches(seed=3)
        got = await store.vector_search_many(queries, limit=4)
        assert got == await one_pipeline(store, queries)
        assert len(got) == QUERIES and all(len(hits) == 4 for hits in got)
        # Each answer is its own query's: the nearest row lies in the query's namespace.
        for (_, where), hits in zip(queries, got, strict=True):
            rows = await store.get_rows([h.row_id for h in hits])
            assert {r.namespace for r in rows} == set(where.namespaces or ())
    finally:
        await store.close()


async def test_a_half_that_fails_raises_the_stores_error_not_a_group() -> None:
    calls: list[int] = []

    async def read(fn: Callable[[Conn], Awaitable[list[list[Hit]]]]) -> list[list[Hit]]:
        calls.append(len(calls))
        if len(calls) == 2:
            raise StoreError("PostgreSQL store 'x': the server went away")
        return []

    queries = [("[1,0,0,0]", RowFilter())] * _pg_split.SPLIT_FROM
    with pytest.raises(StoreError, match="the server went away"):
        await _pg_split.knn_split(read, queries, 3)
    assert calls == [0, 1]  # split in two


async def test_few_searches_take_one_connection() -> None:
    calls: list[object] = []

    async def read(fn: Callable[[Conn], Awaitable[list[list[Hit]]]]) -> list[list[Hit]]:
        calls.append(fn)
        return [[] for _ in range(_pg_split.SPLIT_FROM - 1)]

    queries = [("[1,0,0,0]", RowFilter())] * (_pg_split.SPLIT_FROM - 1)
    assert await _pg_split.knn_split(read, queries, 3) == [[]] * (_pg_split.SPLIT_FROM - 1)
    assert len(calls) == 1
