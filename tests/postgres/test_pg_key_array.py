"""Row keys sent to the PostgreSQL store as a binary `int8[]` parameter (`KeyArray`)."""

from __future__ import annotations

import psycopg
import pytest

from phi.memory.store._pg_sql import KeyArray

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "keys",
    [[], [7], [1, 2**31, 2**62, -(2**63), 2**63 - 1, 0, 7]],
    ids=["empty", "one", "int8 extremes and a repeat"],
)
async def test_row_keys_reach_the_server_as_the_int8_array_they_are(
    pg_url: str, keys: list[int]
) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT %(k)s::bigint[], cardinality(%(k)s::bigint[]),"
            " %(k)s::bigint[] = %(l)s::bigint[], (SELECT array_agg(u ORDER BY n)"
            " FROM unnest(%(k)s::bigint[]) WITH ORDINALITY AS t(u, n))",
            {"k": KeyArray.of(keys), "l": keys},
        )
        values, size, same_as_list, unnested = await cur.fetchone() or (None, None, None, None)
    assert values == keys
    assert size == len(keys)
    assert same_as_list is True
    assert unnested == (keys or None)


async def test_row_keys_are_matched_by_any(pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT i FROM generate_series(1, 6) AS i WHERE i = ANY(%s::bigint[])"
            " AND NOT i = ANY(%s::bigint[]) ORDER BY i",
            (KeyArray.of([2, 4, 6, 99]), KeyArray.of([4])),
        )
        found = [i for (i,) in await cur.fetchall()]
    assert found == [2, 6]
