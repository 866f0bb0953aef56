"""Bulk loading a PostgreSQL store: the HNSW index is built once after the load, only an
empty store open nowhere else takes that path, and a load killed midway is finished by
the next open."""

from __future__ import annotations

import signal
import sys
import textwrap
from collections.abc import AsyncIterator

import anyio
import anyio.streams.text
import numpy as np
import numpy.typing as npt
import psycopg
import pytest

from phi.memory.store import PostgresStore, RowFilter, _pg_bulk
from phi.memory.store._pg_schema import BUILD_MEMORY_MAX, build_memory
from phi.memory.store._pg_sql import EXACT_MAX
from tests.memory.conformance import CONFORMANCE_SPEC, StoreConformance, make_row, w

pytestmark = pytest.mark.anyio


async def index_state(url: str) -> tuple[bool, bool]:
    """Whether the HNSW index exists, and whether a bulk load is recorded."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT to_regclass('row_vectors_hnsw') IS NOT NULL,"
            " EXISTS (SELECT 1 FROM phi_meta WHERE key = 'bulk_load')"
        )
        found, recorded = await cur.fetchone() or (False, False)
        return bool(found), bool(recorded)


async def opened(url: str) -> PostgresStore:
    store = PostgresStore(url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    return store


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PostgresStore]:
    store = await opened(pg_url)
    yield store
    await store.close()


class TestBulkLoadConformance(StoreConformance):
    """Every store behaviour holds inside a bulk load (no HNSW index yet)."""

    @pytest.fixture
    async def store(self, pg_url: str) -> AsyncIterator[PostgresStore]:
        store = await opened(pg_url)
        async with store.bulk_load() as deferred:
            assert deferred
            yield store
        await store.close()


def random_vectors(n: int) -> npt.NDArray[np.float32]:
    v = np.random.default_rng(3).standard_normal((n, 4)).astype(np.float32)
    normed: npt.NDArray[np.float32] = v / np.linalg.norm(v, axis=1, keepdims=True)
    return normed


async def test_the_index_is_built_once_after_the_load(store: PostgresStore, pg_url: str) -> None:
    n = EXACT_MAX + 500  # an unscoped search then goes through the index, once it exists
    rows = [make_row(f"row {i}") for i in range(n)]
    vectors = random_vectors(n)
    query = vectors[0] + vectors[1]
    query /= np.linalg.norm(query)
    expected = [rows[i].row_id for i in np.argsort(-(vectors @ query))[:10]]
    async with store.bulk_load() as deferred:
        assert deferred
        assert await index_state(pg_url) == (False, True)
        async with store.bulk_load() as again:
            assert again is False  # one load at a time
        for start in range(0, n, 500):
            await store.write(
                [
                    w(r, v)
                    for r, v in zip(
                        rows[start : start + 500], vectors[start : start + 500], strict=True
                    )
                ],
                [],
            )
        inside = await store.vector_search(query, RowFilter(), limit=10)
    assert await index_state(pg_url) == (True, False)
    after = await store.vector_search(query, RowFilter(), limit=10)
    assert [h.row_id for h in inside] == [h.row_id for h in after] == expected


async def test_a_failed_load_still_builds_the_index(store: PostgresStore, pg_url: str) -> None:
    async def load_then_fail() -> None:
        async with store.bulk_load() as deferred:
            assert deferred
            await store.write([w(make_row("kept"), random_vectors(1)[0])], [])
            raise RuntimeError("source went away")

    with pytest.raises(RuntimeError, match="source went away"):
        await load_then_fail()
    assert await index_state(pg_url) == (True, False)
    assert await store.count(RowFilter()) == 1


async def test_a_store_open_elsewhere_keeps_the_ordinary_path(
    store: PostgresStore, pg_url: str
) -> None:
    other = await opened(pg_url)
    try:
        async with store.bulk_load() as deferred:
            assert deferred is False
            assert await index_state(pg_url) == (True, False)
    finally:
        await other.close()
    async with store.bulk_load() as deferred:
        assert deferred  # the other process closed the store: nobody else has it open


LOADER = textwrap.dedent(
    """
    import sys, anyio
    from phi.memory.store import PostgresStore
    from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w

    async def main():
        store = PostgresStore(sys.argv[1])
        await store.connect()
        await store.bind_embedding(CONFORMANCE_SPEC)
        async with store.bulk_load() as deferred:
            print(f"deferred {deferred}", flush=True)
            for b in range(3):
                rows = [make_row(f"batch {b} row {i}") for i in range(20)]
                await store.write([w(r, vec(1, b, i, 1)) for i, r in enumerate(rows)], [])
            print("written", flush=True)
            await anyio.sleep(3600)

    anyio.run(main)
    """
)


async def loaders(url: str) -> int:
    """Sessions holding the bulk loader's lock of the store at `url`."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute("SELECT current_schema()")
        (schema,) = await cur.fetchone() or ("",)
        cur = await conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
            " AND classid = %s AND objid = %s",
            (_pg_bulk.LOADING, _pg_bulk.schema_key(str(schema))),
        )
        (n,) = await cur.fetchone() or (0,)
        return int(n)


async def test_a_load_killed_midway_is_finished_by_the_next_open(pg_url: str) -> None:
    proc = await anyio.open_process([sys.executable, "-c", LOADER, pg_url])
    assert proc.stdout is not None
    lines = anyio.streams.text.TextReceiveStream(proc.stdout)
    text = ""
    try:
        with anyio.fail_after(60):
            while "written" not in text:
                text += await lines.receive()
        assert text.startswith("deferred True")
        # While the loader lives, opening the store leaves its load alone.
        reader = await opened(pg_url)
        try:
            assert await reader.count(RowFilter()) == 60
            assert await index_state(pg_url) == (False, True)
        finally:
            await reader.close()
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.aclose()
    with anyio.fail_after(30):  # the server notices the closed connection and drops its lock
        while await loaders(pg_url) > 0:  # noqa: ASYNC110 (a server's state: no event to wait on)
            await anyio.sleep(0.1)
    assert await index_state(pg_url) == (False, True)
    store = await opened(pg_url)
    try:
        assert await index_state(pg_url) == (True, False)
        assert await store.count(RowFilter()) == 60
        hits = await store.vector_search(random_vectors(1)[0], RowFilter(), limit=3)
        assert len(hits) == 3
    finally:
        await store.close()


def test_the_build_asks_for_the_memory_its_graph_needs() -> None:
    # pgvector held 2,253 bytes per 384-d vector; the estimate covers that with a margin.
    assert 2253 * 100_000 < build_memory(100_000, 384) < 1.5 * 2253 * 100_000
    assert build_memory(10_000_000, 384) == BUILD_MEMORY_MAX
