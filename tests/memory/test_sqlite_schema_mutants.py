"""The SQLite store's connections and migrations: what a caller sees when they go right and
when they go wrong (the identity check's message, a failed migration, a vanished file).

The first test starts a separate process on purpose: migrations register themselves when
the module is imported, and only a fresh interpreter imports it again.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import apsw
import pytest

from phi.errors import StoreError
from phi.memory.store import RowFilter, SQLiteStore
from phi.memory.store._sqlite_schema import (
    apply_migrations,
    open_connection,
    prepare_connection,
)
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w

pytestmark = pytest.mark.anyio

MIGRATIONS = [
    "m001_initial",
    "m002_learning",
    "m003_recall_indexes",
    "m004_namespace_terms",
    "m005_embed_queue",
    "m006_embed_queue_namespace",
    "m007_written_by",
]

OPEN_IN_A_FRESH_PROCESS = textwrap.dedent(
    """
    import sys, anyio
    from phi.memory.store import SQLiteStore

    async def main():
        store = SQLiteStore(sys.argv[1])
        await store.connect()
        await store.close()

    anyio.run(main)
    """
)


def _migrations(path: Path) -> list[str]:
    conn = apsw.Connection(str(path))
    try:
        return [name for (name,) in conn.execute("SELECT name FROM phi_migrations ORDER BY name")]
    finally:
        conn.close()


def test_a_fresh_process_migrates_a_blank_store(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    done = subprocess.run(
        [sys.executable, "-c", OPEN_IN_A_FRESH_PROCESS, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert _migrations(path) == MIGRATIONS


def _foreign(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.close()


async def test_another_programs_database_is_refused_in_one_line_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "invoices.db"
    _foreign(path)
    expected = (
        f"{str(path)!r} is a SQLite database of another program, not a phi memory store;"
        " choose another path"
    )
    with pytest.raises(StoreError) as raised:
        await SQLiteStore(path).connect()
    assert str(raised.value) == expected
    # The check inside the migrations' transaction (a race lost to another program) says
    # the same, and leaves the file as it was.
    conn = open_connection(path)
    with pytest.raises(StoreError) as again:
        apply_migrations(conn, path)
    assert str(again.value) == expected
    assert not conn.in_transaction
    assert [n for (n,) in conn.execute("SELECT name FROM sqlite_schema")] == ["invoices"]
    conn.close()


def test_migrations_say_which_they_applied(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    conn = open_connection(path)
    prepare_connection(conn)
    assert apply_migrations(conn, path) == MIGRATIONS
    assert apply_migrations(conn, path) == []
    assert not conn.in_transaction
    conn.close()


async def test_a_failing_migration_applies_nothing_and_says_why(tmp_path: Path) -> None:
    """Migrations 5 and 6 pending; 6 fails on its last statement. Neither stays applied,
    the driver's reason reaches the caller, and the file is not left locked."""
    path = tmp_path / "m.db"
    store = SQLiteStore(path)
    await store.connect()
    await store.close()
    conn = apsw.Connection(str(path))
    conn.execute(
        "DROP INDEX embed_queue_namespace; DROP TABLE embed_queue;"
        " ALTER TABLE rows DROP COLUMN written_by;"
        " DELETE FROM phi_migrations WHERE name IN ('m005_embed_queue',"
        " 'm006_embed_queue_namespace', 'm007_written_by');"
        # What migration 6 names its index: its CREATE INDEX fails.
        " CREATE TABLE embed_queue_namespace (x)"
    )
    conn.close()
    with pytest.raises(StoreError) as raised:
        await SQLiteStore(path).connect()
    assert str(raised.value) == (
        f"the store {str(path)!r} failed: SQLError: "
        "there is already a table named embed_queue_namespace"
    )
    assert _migrations(path) == MIGRATIONS[:4]
    conn = apsw.Connection(str(path))
    tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert "embed_queue" not in tables
    conn.execute("BEGIN IMMEDIATE")  # nobody holds the write lock
    conn.execute("ROLLBACK")
    conn.close()


def test_a_prepared_connection_loads_no_further_extension(tmp_path: Path) -> None:
    """sqlite-vec is loaded, then loading is switched off: SQL cannot load a library."""
    conn = open_connection(tmp_path / "m.db")
    prepare_connection(conn)
    assert next(conn.execute("SELECT vec_length(?)", (vec(1, 0, 0, 0).tobytes(),)))[0] == 4
    with pytest.raises(apsw.SQLError, match="not authorized"):
        conn.execute("SELECT load_extension('/no/such/library')")
    conn.close()


async def test_a_store_whose_file_vanished_is_not_made_again_by_a_read(tmp_path: Path) -> None:
    path = tmp_path / "gone.db"
    store = SQLiteStore(path)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
    for sibling in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        sibling.unlink(missing_ok=True)
    with pytest.raises(StoreError, match="unable to open database file"):
        await store.count(RowFilter(statuses=None))
    assert not path.exists()
    await store.close()
