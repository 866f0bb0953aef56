"""The SQLite store: the conformance suite, plus what only a file can do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import apsw
import pytest

from phi.errors import StoreError
from phi.memory.store import SQLiteStore, Store
from tests.memory.conformance import CONFORMANCE_SPEC, StoreConformance

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = SQLiteStore(tmp_path / "conformance.db")
    await opened.connect()
    await opened.bind_embedding(CONFORMANCE_SPEC)
    yield opened
    await opened.close()


class TestSQLiteConformance(StoreConformance):
    pass


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
        "row_vectors",
        "phi_meta",
        "phi_migrations",
    } <= names
    assert [n for (n,) in conn.execute("SELECT name FROM phi_migrations")] == [
        "m001_initial",
        "m002_learning",
        "m003_recall_indexes",
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
