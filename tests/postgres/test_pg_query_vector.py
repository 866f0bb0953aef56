"""Query vectors sent to the PostgreSQL store in pgvector's binary form (`QueryVector`)."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from phi.memory.store._pg_sql import QueryVector, vector_literal

pytestmark = pytest.mark.anyio

AWKWARD = np.array(
    [0.1, -0.0, 1e-45, 3.4028235e38, -1.1754944e-38, 0.33333334, 1.0, -7.5], dtype=np.float32
)
"""A denormal, the float32 extremes, a negative zero and values with no short decimal."""


async def test_a_query_vector_reaches_the_server_bit_for_bit(pg_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT %s::vector::real[], %s::vector = %s::vector, vector_dims(%s::vector)",
            (QueryVector.of(AWKWARD), QueryVector.of(AWKWARD), vector_literal(AWKWARD),
             QueryVector.of(AWKWARD)),
        )  # fmt: skip
        values, same_as_text, dims = await cur.fetchone() or (None, None, None)
    assert np.array_equal(
        np.array(values, dtype=np.float32).view(np.uint32), AWKWARD.view(np.uint32)
    )
    assert same_as_text is True
    assert dims == len(AWKWARD)


async def test_a_query_vector_is_scored_as_its_text_form_is(pg_url: str) -> None:
    rng = np.random.default_rng(5)
    stored, query = rng.standard_normal((2, 384)).astype(np.float32)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT %(s)s::vector <=> %(b)s::vector, %(s)s::vector <=> %(t)s::vector",
            {"s": vector_literal(stored), "b": QueryVector.of(query), "t": vector_literal(query)},
        )
        binary, text = await cur.fetchone() or (None, None)
    assert binary == text
    assert binary is not None and 0.5 < binary < 1.5  # unrelated random directions


async def test_a_query_vector_with_nan_is_refused_by_the_server(pg_url: str) -> None:
    with_nan = np.array([1.0, np.nan, 0.0], dtype=np.float32)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.DataError, match="NaN"):
            await conn.execute("SELECT %s::vector", (QueryVector.of(with_nan),))
