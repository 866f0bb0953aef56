"""The PostgreSQL store's connection pool: bounded by its setting under a burst, and never
sized past what the server allows (`phi.memory.store._pg_pool`)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator

import anyio
import numpy as np
import psycopg
import pytest

from phi.errors import StoreError
from phi.memory.store import PostgresStore, RowFilter
from phi.memory.store._pg_pool import SPARE, ServerRoom, pool_bound, server_room
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w
from tests.postgres.schemas import fresh_schema, server_url

pytestmark = pytest.mark.anyio

BURST = 240
"""Operations started at once: far more than the bound, so the pool is asked to grow."""


@pytest.fixture
async def named_url() -> AsyncIterator[tuple[str, str]]:
    """A fresh schema's URL whose sessions carry an application name of their own, and
    that name (how `pg_stat_activity` tells this test's connections from every other's)."""
    name = f"phi-pool-{uuid.uuid4().hex[:12]}"
    async with fresh_schema() as url:
        yield f"{url}&application_name={name}", name


async def _connections(conn: psycopg.AsyncConnection[tuple[int]], name: str) -> int:
    cur = await conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
    )
    (n,) = await cur.fetchone() or (0,)
    return n


async def test_a_burst_never_holds_more_connections_than_the_bound(
    named_url: tuple[str, str],
) -> None:
    url, name = named_url
    store = PostgresStore(url, pool_max=3)
    await store.connect()
    try:
        await store.bind_embedding(CONFORMANCE_SPEC)
        await store.write([w(make_row(f"seed {i}"), vec(1, i, 0, 1)) for i in range(50)], [])
        rng = np.random.default_rng(7)
        done: list[int] = []
        seen: list[int] = []

        async def operation(i: int) -> None:
            if i % 5 == 0:  # one write to four reads, as agents do
                await store.write([w(make_row(f"burst {i}"), vec(*rng.random(4)))], [])
            elif i % 2:
                await store.vector_search(vec(*rng.random(4)), RowFilter(), limit=10)
            else:
                await store.text_search(["seed", "burst"], RowFilter(), limit=10)
            done.append(i)

        async with await psycopg.AsyncConnection.connect(server_url(), autocommit=True) as probe:

            async def watch(stop: anyio.Event) -> None:
                while not stop.is_set():
                    seen.append(await _connections(probe, name))
                    await anyio.sleep(0.002)

            stop = anyio.Event()
            async with anyio.create_task_group() as watching:
                watching.start_soon(watch, stop)
                async with anyio.create_task_group() as burst:
                    for i in range(BURST):
                        burst.start_soon(operation, i)
                stop.set()
            after = await _connections(probe, name)
        assert sorted(done) == list(range(BURST))
        assert await store.count(RowFilter()) == 50 + BURST // 5
        assert len(seen) > 5, "the watcher must have looked during the burst"
        assert max(seen) <= 3
        assert after == 3, "the burst grows the pool to its bound (and the watcher sees it)"
    finally:
        await store.close()


async def test_a_setting_past_the_server_is_lowered_with_one_line(
    named_url: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = named_url
    async with await psycopg.AsyncConnection.connect(server_url(), autocommit=True) as conn:
        room = await server_room(conn)
    store = PostgresStore(url, pool_max=10_000)
    with caplog.at_level(logging.WARNING, logger="phi.memory.store.postgres"):
        await store.connect()
    try:
        (record,) = caplog.records
        message = record.getMessage()
        assert "\n" not in message
        assert message.startswith("PHI_POSTGRES_POOL_MAX=10000 is more than the PostgreSQL")
        assert message.endswith(f"this process's pool stops at {room.budget}")
        assert store._pool is not None and store._pool.max_size == room.budget
        assert await store.count(RowFilter()) == 0  # and the store works
    finally:
        await store.close()


async def test_a_setting_the_server_allows_is_kept_without_a_word(
    named_url: tuple[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    url, _ = named_url
    store = PostgresStore(url, pool_max=2)
    with caplog.at_level(logging.WARNING):
        await store.connect()
    try:
        assert caplog.records == []
        assert store._pool is not None and store._pool.max_size == 2
    finally:
        await store.close()


async def test_the_room_counts_the_servers_limits_and_its_open_connections() -> None:
    url = server_url()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT current_setting('max_connections')::int,"
            " current_setting('superuser_reserved_connections')::int,"
            " current_setting('reserved_connections')::int"
        )
        max_connections, superuser, reserved = await cur.fetchone() or (0, 0, 0)
        before = await server_room(conn)
        async with (
            await psycopg.AsyncConnection.connect(url) as _one,
            await psycopg.AsyncConnection.connect(url) as _two,
        ):
            during = await server_room(conn)
    assert (before.max_connections, before.reserved) == (max_connections, superuser + reserved)
    # Other tests may open and close connections meanwhile; two more are certainly here.
    assert during.in_use >= 3 and before.in_use >= 1
    assert during.budget == max_connections - superuser - reserved - SPARE


async def test_the_pools_sessions_say_they_are_phis(pg_url: str) -> None:
    """Without an application name in the URL (or PGAPPNAME), the pool's sessions are
    named `phi` in `pg_stat_activity`, where an operator counts them."""
    store = PostgresStore(pg_url)
    await store.connect()
    try:
        async with await psycopg.AsyncConnection.connect(server_url(), autocommit=True) as conn:
            cur = await conn.execute(
                "SELECT DISTINCT application_name FROM pg_stat_activity WHERE pid = ANY(%s)",
                (list(store._own_pids),),
            )
            assert await cur.fetchall() == [("phi",)]
    finally:
        await store.close()


def test_a_pool_below_one_connection_is_refused_in_one_line() -> None:
    with pytest.raises(
        StoreError, match=r"^the connection pool needs at least 1 connection, not 0$"
    ):
        PostgresStore("postgresql://nowhere/x", pool_max=0)


ROOM = ServerRoom(max_connections=100, reserved=3, in_use=11)
"""92 connections for pools, 10 of them held by others (the asking one closes)."""


def test_the_bound_is_the_setting_when_the_server_has_room() -> None:
    assert ROOM.budget == 92 and ROOM.free == 82
    assert pool_bound(8, ROOM, where="db") == (8, None)
    assert pool_bound(82, ROOM, where="db") == (82, None)


def test_a_setting_past_the_budget_is_lowered_to_it() -> None:
    bound, warning = pool_bound(93, ROOM, where="postgresql://phi@db/phi")
    assert bound == 92
    assert warning == (
        "PHI_POSTGRES_POOL_MAX=93 is more than the PostgreSQL server at"
        " 'postgresql://phi@db/phi' allows (max_connections 100 - 3 reserved - 5 spare = 92):"
        " this process's pool stops at 92"
    )
    idle = ServerRoom(max_connections=100, reserved=3, in_use=1)
    assert pool_bound(92, idle, where="db") == (92, None)  # the whole budget, and free


def test_a_bound_past_the_free_connections_is_kept_and_warned_about() -> None:
    bound, warning = pool_bound(83, ROOM, where="db")
    assert bound == 83
    assert warning == (
        "only 82 connections of the PostgreSQL server at 'db' are free now (max_connections"
        " 100 - 3 reserved - 5 spare = 92, 10 in use) and this process's pool may grow to 83"
        " (PHI_POSTGRES_POOL_MAX): with N processes on one server keep N x"
        " PHI_POSTGRES_POOL_MAX within 92"
    )
    full = ServerRoom(max_connections=100, reserved=3, in_use=99)
    assert pool_bound(1, full, where="db")[1] is not None
    assert "only 0 connections" in (pool_bound(1, full, where="db")[1] or "")


def test_a_tiny_server_still_gets_one_connection() -> None:
    tiny = ServerRoom(max_connections=6, reserved=3, in_use=1)
    assert tiny.budget == 1
    assert pool_bound(8, tiny, where="db")[0] == 1
