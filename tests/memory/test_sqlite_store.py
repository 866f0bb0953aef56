"""The SQLite store: both conformance suites (rows and ledger), plus what only a file can do."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import cast

import anyio
import apsw
import pytest

from phi.errors import StoreError
from phi.memory import Memory, MiniLMEmbedder, NewRow
from phi.memory.learning.blocks import Blocks, user_label
from phi.memory.store import RowFilter, SQLiteStore, Store
from phi.memory.store._sqlite_schema import (
    apply_migrations,
    check_identity,
    open_connection,
    prepare_connection,
)
from tests.memory.conformance import CONFORMANCE_SPEC, StoreConformance, make_row, vec, w

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = SQLiteStore(tmp_path / "conformance.db")
    await opened.connect()
    await opened.bind_embedding(CONFORMANCE_SPEC)
    yield opened
    await opened.close()


class TestSQLiteConformance(StoreConformance):
    """`RowStoreConformance` and `LedgerConformance`, the ledger being the same file."""


async def test_blank_database_is_migrated_to_the_schema(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "blank.db")
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    await store.close()
    conn = apsw.Connection(str(tmp_path / "blank.db"))
    names = {
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type IN ('table', 'index')"
        )
    }
    assert {
        "rows",
        "edges",
        "row_refs",
        "row_text",
        "row_terms",
        "row_vectors",
        "embed_queue",
        "phi_meta",
        "phi_migrations",
    } <= names
    assert [n for (n,) in conn.execute("SELECT name FROM phi_migrations")] == [
        "m001_initial",
        "m002_learning",
        "m003_recall_indexes",
        "m004_namespace_terms",
        "m005_embed_queue",
        "m006_embed_queue_namespace",
        "m007_written_by",
    ]
    assert next(conn.execute("PRAGMA journal_mode"))[0] == "wal"
    assert next(conn.execute("PRAGMA application_id"))[0] == 0x70686931


async def test_reopening_keeps_rows_and_embedding(tmp_path: Path) -> None:
    first = SQLiteStore(tmp_path / "m.db")
    await first.connect()
    await first.bind_embedding(CONFORMANCE_SPEC)
    await first.close()
    second = SQLiteStore(tmp_path / "m.db")
    await second.connect()
    assert await second.embedding() == CONFORMANCE_SPEC
    await second.close()


async def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"these are my notes, not a database" * 100)
    with pytest.raises(StoreError, match="not a SQLite database"):
        await SQLiteStore(path).connect()
    assert path.read_bytes() == b"these are my notes, not a database" * 100


async def test_another_programs_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.close()
    with pytest.raises(StoreError, match="another program"):
        await SQLiteStore(path).connect()
    conn = apsw.Connection(str(path))
    assert [n for (n,) in conn.execute("SELECT name FROM sqlite_schema")] == ["invoices"]


async def test_unconnected_store_says_how_to_connect(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not connected"):
        await SQLiteStore(tmp_path / "x.db").count(
            __import__("phi.memory.store", fromlist=["RowFilter"]).RowFilter()
        )


def _open_connections(path: Path) -> int:
    return sum(1 for conn in apsw.connections() if Path(conn.filename) == path)


async def test_close_and_connect_cycles_leak_no_connection(tmp_path: Path) -> None:
    path = tmp_path / "cycles.db"
    store = SQLiteStore(path)
    for cycle in range(5):
        await store.connect()
        if cycle == 0:
            await store.bind_embedding(CONFORMANCE_SPEC)
        # Several reads at once, so more than one worker thread opens a reader.
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(store.count, RowFilter(statuses=None))
        assert await store.count(RowFilter(statuses=None)) == 0
        await store.close()
        assert _open_connections(path) == 0, f"cycle {cycle} left a connection open"


async def test_forget_failing_inside_its_transaction_leaves_the_person_whole(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    did = "did:plc:alice"
    namespace = f"phi-users-{did}"
    async with Memory.open(tmp_path / "m.db", embedder=minilm) as memory:
        rows = [
            await memory.remember(
                NewRow(content=f"fact {i} about alice", namespace=namespace, author=did)
            )
            for i in range(3)
        ]
        await Blocks(memory=memory).set(user_label(did), "alice likes crows")
        before = await memory.store.namespaces()
        # A real failure inside the erase, after part of it ran: deleting the last row aborts.
        conn = apsw.Connection(str(tmp_path / "m.db"))
        conn.execute(
            "CREATE TRIGGER crash AFTER DELETE ON rows WHEN old.row_id = "
            f"'{rows[-1].row_id}' BEGIN SELECT RAISE(ABORT, 'simulated crash'); END"
        )
        conn.close()
        with pytest.raises(StoreError, match="simulated crash"):
            await memory.forget(namespace)
        assert await memory.store.namespaces() == before
        assert [r.row_id for r in await memory.store.get_rows([r.row_id for r in rows])] == [
            r.row_id for r in rows
        ]
        assert await memory.store.text_search(["alice"], RowFilter(), limit=10) != []
        assert (await Blocks(memory=memory).view(user_label(did))).content == "alice likes crows"


async def test_a_lock_held_too_long_is_a_store_error_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    store = SQLiteStore(path, busy_timeout=0.2)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    other = apsw.Connection(str(path))
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        with pytest.raises(StoreError, match=r"stayed locked by another process for over 0.2 s"):
            await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert await store.count(RowFilter(statuses=None)) == 0
    await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
    assert await store.count(RowFilter(statuses=None)) == 1
    await store.close()


async def test_a_queue_from_before_migration_6_learns_its_namespaces(tmp_path: Path) -> None:
    """Rows queued by a store made before the queue knew namespaces count in their scope."""
    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    waiting = [make_row("a", namespace="ns-a"), make_row("b", namespace="ns-b")]
    await store.write([w(r, None) for r in waiting], [])
    await store.close()
    conn = apsw.Connection(str(path))  # back to migration 5's queue: no namespace column
    conn.execute("DROP INDEX embed_queue_namespace")
    conn.execute("ALTER TABLE embed_queue DROP COLUMN namespace")
    conn.execute("DELETE FROM phi_migrations WHERE name = 'm006_embed_queue_namespace'")
    conn.close()
    await store.connect()
    try:
        counts = [
            await store.count_unembedded(RowFilter(namespaces=(ns,))) for ns in ("ns-a", "ns-b")
        ]
        assert counts == [1, 1]
    finally:
        await store.close()


def test_the_identity_check_reads_one_snapshot(tmp_path: Path) -> None:
    """Two processes opening one fresh file: the second checks what the file is while the
    first commits the schema. Read in two statements (two snapshots), the check saw no
    application id, then tables, and refused a phi store as another program's database."""
    path = tmp_path / "fresh.db"
    other = open_connection(path)
    prepare_connection(other)
    conn = open_connection(path)

    class CommitsBetweenReads:
        """The first process commits its schema right after the check's first read."""

        def __init__(self) -> None:
            self.reads = 0

        def execute(self, sql: str) -> Iterator[tuple[object, ...]]:
            rows = list(conn.execute(sql))
            self.reads += 1
            if self.reads == 1:
                apply_migrations(other, path)
            return iter(rows)

    check_identity(cast(apsw.Connection, CommitsBetweenReads()), path)
    check_identity(conn, path)  # and a phi store is still one afterwards
    foreign = open_connection(tmp_path / "foreign.db")
    foreign.execute("CREATE TABLE notes (body TEXT)")
    with pytest.raises(StoreError, match="another program"):
        check_identity(foreign, tmp_path / "foreign.db")
    for c in (conn, other, foreign):
        c.close()
