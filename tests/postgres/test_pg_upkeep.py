"""`phi memory settle | cluster` (and `phi.memory.upkeep`): a PostgreSQL store's vectors
put into its HNSW graph and its rows laid out in namespace order by command, on the tests'
real PostgreSQL; on a SQLite store both say there is nothing to do."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner, Result

from phi.cli import app
from phi.errors import InvalidInput, StoreError
from phi.memory.store import PostgresStore
from phi.memory.upkeep import cluster, settle
from tests.memory.conformance import CONFORMANCE_SPEC
from tests.postgres.test_pg_locality import graph_and_fresh, rows_for, run

pytestmark = pytest.mark.anyio


async def phi(*args: str) -> Result:
    """The command line, in a thread of its own (it runs an event loop of its own)."""
    return await anyio.to_thread.run_sync(CliRunner().invoke, app, list(args))


async def filled(url: str, namespaces: int, each: int) -> None:
    store = PostgresStore(url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    try:
        await store.write(rows_for(namespaces, each, CONFORMANCE_SPEC.dimension), [])
    finally:
        await store.close()


async def test_settle_puts_every_fresh_vector_into_the_graph_once(pg_url: str) -> None:
    await filled(pg_url, 2, 30)
    assert await graph_and_fresh(pg_url) == (0, 60)
    done = await phi("memory", "settle", "--db", pg_url, "--batch", "7", "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert (report["applies"], report["settled"]) == (True, 60)
    assert await graph_and_fresh(pg_url) == (60, 0)
    again = await phi("memory", "settle", "--db", pg_url)
    assert again.exit_code == 0, again.output
    assert "settled 0 vectors into the search graph" in again.output


async def test_cluster_lays_rows_out_by_namespace_and_keeps_every_one(pg_url: str) -> None:
    await filled(pg_url, 5, 12)
    order = [ns for (ns,) in await run(pg_url, "SELECT namespace FROM rows ORDER BY ctid")]
    assert order != sorted(order)
    done = await phi("memory", "cluster", "--db", pg_url)
    assert done.exit_code == 0, done.output
    assert "rows and vectors rewritten in namespace order" in done.output
    order = [ns for (ns,) in await run(pg_url, "SELECT namespace FROM rows ORDER BY ctid")]
    assert order == sorted(order) and len(order) == 60
    assert await run(pg_url, "SELECT count(*) FROM row_vectors") == [(60,)]


async def test_on_sqlite_there_is_nothing_to_do_and_no_store_is_an_error(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.db")
    added = await phi("memory", "add", "likes rust", "-n", "alice", "--db", db)
    assert added.exit_code == 0, added.output
    done = await phi("memory", "settle", "--db", db, "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {
        "location": db,
        "applies": False,
        "settled": 0,
        "seconds": 0.0,
    }
    done = await phi("memory", "cluster", "--db", db)
    assert done.exit_code == 0 and "nothing to cluster" in done.output
    missing = await phi("memory", "settle", "--db", str(tmp_path / "none.db"))
    assert missing.exit_code != 0
    assert "no phi memory store at" in missing.output
    with pytest.raises(StoreError, match="no phi memory store"):
        await cluster(tmp_path / "none.db")
    with pytest.raises(InvalidInput, match="batch 0 must be at least 1"):
        await settle(db, batch=0)


async def test_a_schema_without_a_store_is_named(pg_url: str) -> None:
    """`pg_url`'s schema is empty until a store opens it: nothing to settle is an error
    naming the store, not a silent 0."""
    for command in ("settle", "cluster"):
        done = await phi("memory", command, "--db", pg_url)
        assert done.exit_code != 0
        assert done.output.startswith("error: no phi memory store at 'postgresql://"), done.output


async def test_a_password_in_the_url_is_never_printed() -> None:
    url = "postgresql://phi:hunter2-secret@127.0.0.1:1/phi?connect_timeout=2"
    for command in ("settle", "cluster"):
        done = await phi("memory", command, "--db", url)
        assert done.exit_code != 0
        assert "cannot open the PostgreSQL store" in done.output
        assert "hunter2" not in done.output
