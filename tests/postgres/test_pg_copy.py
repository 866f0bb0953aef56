"""The binary COPY of the PostgreSQL store's bulkiest inserts, read back by the server."""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from phi.memory.store._pg_copy import copy_postings, copy_vectors

pytestmark = pytest.mark.anyio


async def test_postings_copied_read_back_exactly(pg_url: str) -> None:
    postings = [
        ("café", "ns-ü", 1, 2),
        ("naïve", "ns-ü", 1, 1),
        ("x" * 300, "ns-two", 9_007_199_254_740_993, 2_147_483_647),  # past a double, int4 max
        ("日本", "ns-two", 3, 1),
        ("", "", 0, 0),
    ]
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE row_terms (term text, namespace text, id bigint, tf integer)"
        )
        await copy_postings(conn, postings)
        await copy_postings(conn, [])  # an empty stream is a valid one
        cur = await conn.execute("SELECT term, namespace, id, tf FROM row_terms ORDER BY id, term")
        assert await cur.fetchall() == sorted(postings, key=lambda p: (p[2], p[0]))


async def test_vectors_copied_in_one_stream_read_back_exactly(pg_url: str) -> None:
    vectors = np.array([[0.5, -1.25, 3.0], [1e-8, 0.0, -0.0]], dtype=np.float32)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE row_vectors (id bigint, namespace text, embedding vector(3),"
            " fresh boolean)"
        )
        await copy_vectors(conn, [7, 8], ["ns-a", "ns-ß"], vectors, fresh=True)
        cur = await conn.execute(
            "SELECT id, namespace, embedding::real[], fresh FROM row_vectors ORDER BY id"
        )
        got = await cur.fetchall()
    assert [(i, n, f) for i, n, _, f in got] == [(7, "ns-a", True), (8, "ns-ß", True)]
    assert np.array_equal(np.array([e for _, _, e, _ in got], dtype=np.float32), vectors)
