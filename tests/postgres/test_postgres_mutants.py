"""The PostgreSQL store's own logic (`phi.memory.store.postgres`) where the conformance
suite leaves a one-line break unseen: a handle that outlived a move to another model, the
errors it raises and what they name, reads that never queue behind a writer, a store
whose model is not bound yet, the presence a bulk load looks for."""

from __future__ import annotations

import socket
import uuid
from datetime import UTC, datetime, timedelta

import anyio
import apsw
import numpy as np
import psycopg
import pytest

from phi.errors import EmbedderMismatch, EmbedderMoved, StoreError
from phi.memory.store import EmbeddingSpec, PostgresStore, RowFilter
from phi.memory.store.base import HybridQuery
from tests.memory.conformance import CONFORMANCE_SPEC, T0, make_row, vec, w
from tests.postgres.schemas import fresh_schema, in_time_zone, server_url

pytestmark = pytest.mark.anyio

NOT_CONNECTED = "the store is not connected; use `async with Memory.open(...)`"


async def _opened(url: str) -> PostgresStore:
    store = PostgresStore(url)
    await store.connect()
    return store


async def test_a_handle_opened_before_a_move_to_another_model_writes_no_old_vectors(
    pg_store: PostgresStore, pg_url: str
) -> None:
    """Another handle moved the store to another model of the same size: this handle's
    vectors (from the old model) are refused; a row without a vector (queued for whatever
    model the store has) is still taken."""
    first = make_row("first")
    await pg_store.write([w(first, vec(1, 0, 0, 0))], [])
    other = await _opened(pg_url)
    moved_to = EmbeddingSpec(model="moved-4d", dimension=4)
    try:
        assert await other.swap_embedding(moved_to, {first.row_id: vec(0, 1, 0, 0)}) == 0
    finally:
        await other.close()
    with pytest.raises(EmbedderMoved) as raised:
        await pg_store.write([w(make_row("old model"), vec(1, 1, 0, 0))], [])
    assert (raised.value.stored, raised.value.given) == ("moved-4d", "conformance-4d")
    queued = make_row("no vector yet")
    assert await pg_store.write([w(queued, None)], []) == [queued]
    with pytest.raises(EmbedderMoved):
        await pg_store.add_vectors({queued.row_id: vec(0, 0, 1, 0)}, [])
    assert await pg_store.count(RowFilter()) == 2


async def test_an_old_handles_search_after_a_move_to_another_size_says_it_moved(
    pg_store: PostgresStore, pg_url: str
) -> None:
    row = make_row("crows")
    await pg_store.write([w(row, vec(1, 0, 0, 0))], [])
    other = await _opened(pg_url)
    try:
        three = np.array([1, 0, 0], dtype=np.float32)
        spec = EmbeddingSpec(model="moved-3d", dimension=3)
        assert await other.swap_embedding(spec, {row.row_id: three}) == 0
    finally:
        await other.close()
    with pytest.raises(EmbedderMoved) as raised:
        await pg_store.vector_search(vec(1, 0, 0, 0), RowFilter(), limit=5)
    assert (raised.value.stored, raised.value.stored_dim, raised.value.given_dim) == (
        "moved-3d",
        3,
        4,
    )


async def test_a_data_error_that_is_no_move_names_the_store_and_the_reason(
    pg_store: PostgresStore,
) -> None:
    with pytest.raises(StoreError) as raised:
        await pg_store.get_rows(["a\x00b"])
    assert str(raised.value) == (
        f"PostgreSQL store {pg_store.location!r}: PostgreSQL text fields cannot contain NUL"
        " (0x00) bytes"
    )


async def test_a_failing_ledger_write_names_the_store_and_the_reason(
    pg_store: PostgresStore, pg_url: str
) -> None:
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("DROP TABLE learning_state")
    with pytest.raises(StoreError) as raised:
        await pg_store.write_state("block", "persona", "v1", at=T0)
    said = str(raised.value)
    assert said.startswith(f"PostgreSQL store {pg_store.location!r}: ")
    assert 'relation "learning_state" does not exist' in said


async def test_reads_never_wait_for_a_writer(pg_store: PostgresStore, pg_url: str) -> None:
    await pg_store.write([w(make_row("there"), vec(1, 0, 0, 0))], [])
    async with await psycopg.AsyncConnection.connect(pg_url) as writer:
        await writer.execute("SELECT 1 FROM text_stats FOR UPDATE")  # a write in progress
        with anyio.fail_after(10):
            assert await pg_store.count(RowFilter()) == 1
            assert len(await pg_store.latest(RowFilter(), limit=5)) == 1
        await writer.rollback()


async def test_a_store_not_connected_or_closed_says_so(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    with pytest.raises(StoreError) as raised:
        await store.count(RowFilter())
    assert str(raised.value) == NOT_CONNECTED
    sqlite_before = len(apsw.connections())
    await store.connect()
    assert len(apsw.connections()) == sqlite_before + 1  # the text tokenizer's
    await store.close()
    assert len(apsw.connections()) == sqlite_before  # closed with the store
    await store.close()  # a second close is harmless
    with pytest.raises(StoreError) as raised:
        await store.count(RowFilter())
    assert str(raised.value) == NOT_CONNECTED
    await store.connect()  # and it opens again
    try:
        assert await store.count(RowFilter()) == 0
    finally:
        await store.close()


async def test_a_store_without_a_model_yet_finds_nothing_and_refuses_writes(
    pg_url: str,
) -> None:
    store = await _opened(pg_url)
    try:
        assert await store.embedding() is None
        assert await store.vector_search(vec(1, 0, 0, 0), RowFilter(), limit=5) == []
        query = HybridQuery(
            vector=vec(1, 0, 0, 0), terms=("crows",), where=RowFilter(), candidates=5,
            graph_types=(), hops=0, seeds=lambda d, t: [],
        )  # fmt: skip
        signals = await store.hybrid(query)
        assert (signals.dense, signals.text, signals.contents) == ([], [], {})
        with pytest.raises(StoreError) as raised:
            await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
        assert str(raised.value) == "no embedding model is recorded yet; bind one before writing"
    finally:
        await store.close()


async def test_a_model_mismatch_names_both_models_and_sizes(pg_store: PostgresStore) -> None:
    with pytest.raises(EmbedderMismatch) as raised:
        await pg_store.bind_embedding(EmbeddingSpec(model="other", dimension=8))
    found = raised.value
    assert (found.stored, found.stored_dim, found.given, found.given_dim) == (
        "conformance-4d",
        4,
        "other",
        8,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_location_and_errors_never_show_a_password() -> None:
    cases = {
        "postgresql://phi:s3cret@db.example:6543/phi?sslmode=disable": (
            "postgresql://phi:***@db.example:6543/phi?sslmode=disable"
        ),
        "postgresql://phi:s3cret@db.example/phi": "postgresql://phi:***@db.example/phi",
        "postgresql://phi:s3cret@/phi?host=/run/pg": "postgresql://phi:***@/phi?host=/run/pg",
        "postgresql://phi@db.example:6543/phi": "postgresql://phi@db.example:6543/phi",
    }
    assert {url: PostgresStore(url).location for url in cases} == cases
    port = _free_port()
    store = PostgresStore(f"postgresql://phi:s3cret@127.0.0.1:{port}/phi?connect_timeout=2")
    with pytest.raises(StoreError) as raised:
        await store.connect()
    said = str(raised.value)
    assert said.startswith(
        f"cannot open the PostgreSQL store at 'postgresql://phi:***@127.0.0.1:{port}"
    )
    assert "s3cret" not in said


async def test_stats_name_the_backend_the_redacted_location_and_a_size(
    pg_store: PostgresStore,
) -> None:
    stats = await pg_store.stats()
    assert (stats.location, stats.backend) == (pg_store.location, "postgresql")
    assert isinstance(stats.size_bytes, int) and stats.size_bytes > 0


async def test_limits_are_kept_and_a_scan_reads_each_row_once(pg_store: PostgresStore) -> None:
    rows = [make_row(f"r{i}", at=i) for i in range(7)]
    await pg_store.write([w(r, vec(1, i, 0, 1), ("@ref",)) for i, r in enumerate(rows)], [])
    assert len(await pg_store.rows_with_ref("@ref", RowFilter(), limit=2)) == 2
    assert len(await pg_store.unstaged(EmbeddingSpec(model="next", dimension=4), limit=3)) == 3
    scanned = [r.content async for r in pg_store.scan(RowFilter(), batch_size=3)]
    assert scanned == [f"r{i}" for i in range(7)]


async def test_state_history_gives_twenty_versions_unless_asked(pg_store: PostgresStore) -> None:
    for i in range(25):
        await pg_store.write_state("block", "p", f"v{i}", at=T0 + timedelta(minutes=i), keep=30)
    history = await pg_store.state_history("block", "p")
    assert [e.value for e in history] == [f"v{i}" for i in range(24, 4, -1)]


async def test_a_bulk_load_waits_for_no_one_but_another_open_handle(
    pg_store: PostgresStore, pg_url: str
) -> None:
    """An empty store opened by this handle alone is bulk-loaded (its own pool's
    connections do not count); while another handle has it open, it is not."""
    other = await _opened(pg_url)
    try:
        async with pg_store.bulk_load() as deferred:
            assert deferred is False
    finally:
        await other.close()
    async with pg_store.bulk_load() as deferred:
        assert deferred is True
        await pg_store.write([w(make_row("loaded"), vec(1, 0, 0, 0))], [])
    hits = await pg_store.vector_search(vec(1, 0, 0, 0), RowFilter(), limit=1)
    assert len(hits) == 1


async def test_superseding_without_a_time_stamps_now_in_any_server_time_zone(
    pg_url: str,
) -> None:
    store = await _opened(in_time_zone(pg_url, "Pacific/Kiritimati"))  # UTC+14
    try:
        await store.bind_embedding(CONFORMANCE_SPEC)
        old = make_row("old")
        await store.write([w(old, vec(1, 0, 0, 0))], [])
        before = datetime.now(UTC)
        await store.write(
            [w(make_row("new", supersedes=old.row_id), vec(0, 1, 0, 0))],
            [],
            superseded=[old.row_id],
        )
        after = datetime.now(UTC)
        (back,) = await store.get_rows([old.row_id])
    finally:
        await store.close()
    assert back.status == "superseded"
    assert before - timedelta(seconds=1) <= back.updated_at <= after + timedelta(seconds=1)


async def test_a_store_open_in_another_schema_does_not_hold_up_a_bulk_load(
    pg_store: PostgresStore,
) -> None:
    """Presence is per store (per schema), not per database."""
    async with fresh_schema() as url:
        elsewhere = await _opened(url)
        try:
            async with pg_store.bulk_load() as deferred:
                assert deferred is True
        finally:
            await elsewhere.close()


async def _sessions(name: str) -> list[str]:
    """The states of the server's sessions named `name` (`application_name`)."""
    async with await psycopg.AsyncConnection.connect(server_url(), autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT state FROM pg_stat_activity WHERE application_name = %s", (name,)
        )
        return [str(state) for (state,) in await cur.fetchall()]


async def _until_active(name: str, n: int) -> None:
    for _ in range(400):
        if (await _sessions(name)).count("active") >= n:
            return
        await anyio.sleep(0.05)


async def test_an_idle_store_holds_two_connections_and_reads_run_side_by_side_on_four(
    pg_url: str,
) -> None:
    name = f"phi-pool-{uuid.uuid4().hex[:8]}"
    store = await _opened(f"{pg_url}&application_name={name}")
    try:
        await store.bind_embedding(CONFORMANCE_SPEC)
        assert len(await _sessions(name)) == 2  # a search may ask two things at once
        async with await psycopg.AsyncConnection.connect(pg_url) as locker:
            # Reads that cannot finish yet: each keeps its connection busy meanwhile.
            await locker.execute("LOCK TABLE rows IN ACCESS EXCLUSIVE MODE")
            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(store.count, RowFilter())
                with anyio.fail_after(20):
                    await _until_active(name, 4)
                await anyio.sleep(0.3)  # no fifth connection comes
                assert (await _sessions(name)).count("active") == 4
                await locker.rollback()
    finally:
        await store.close()


async def test_ledger_writes_never_wait_for_a_row_writer(
    pg_store: PostgresStore, pg_url: str
) -> None:
    """State and the model-call log touch no row: a row write in progress (holding the
    store's write lock) does not hold them up."""
    await pg_store.write([w(make_row("there"), vec(1, 0, 0, 0))], [])
    async with await psycopg.AsyncConnection.connect(pg_url) as writer:
        await writer.execute("SELECT 1 FROM text_stats FOR UPDATE")  # a row write in progress
        with anyio.fail_after(10):
            assert await pg_store.write_state("block", "persona", "v1", at=T0) == 1
            assert await pg_store.erase_state("block", "persona") == 1
        await writer.rollback()
