"""The SQLite store's own surface, exactly: its one-line errors (each names the store and
what to do), its connection lifecycle, its stats, paging, and a handle left behind by a
move to another model. The behaviour it shares with PostgreSQL is in the conformance
suites (`test_sqlite_store.py`)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import apsw
import numpy as np
import pytest

from phi.errors import EmbedderMismatch, StoreError
from phi.memory import Memory, NewRow
from phi.memory.store import EmbeddingSpec, RowFilter, SQLiteStore
from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w
from tests.memory.conftest import TinyEmbedder

pytestmark = pytest.mark.anyio

NOT_CONNECTED = "the store is not connected; use `async with Memory.open(...)`"


def _open_connections(path: Path) -> int:
    return sum(1 for conn in apsw.connections() if Path(conn.filename) == path)


async def _bound(path: Path, *, busy_timeout: float = 10.0) -> SQLiteStore:
    store = SQLiteStore(path, busy_timeout=busy_timeout)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    return store


async def test_a_store_not_connected_or_closed_says_how_to_connect(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    assert await store.embedding() is None
    for call in (store.count(RowFilter()), store.add_edges([])):
        with pytest.raises(StoreError) as raised:
            await call
        assert str(raised.value) == NOT_CONNECTED
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
    assert await store.count(RowFilter()) == 1
    await store.close()
    for call in (store.count(RowFilter()), store.erase_state("block", "x")):
        with pytest.raises(StoreError) as raised:
            await call
        assert str(raised.value) == NOT_CONNECTED
    assert _open_connections(tmp_path / "m.db") == 0


async def test_a_store_with_no_model_yet_finds_nothing_by_meaning_and_takes_no_row(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    await store.connect()
    try:
        assert await store.vector_search(vec(1, 0, 0, 0), RowFilter(), limit=3) == []
        with pytest.raises(StoreError) as raised:
            await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
        assert str(raised.value) == "no embedding model is recorded yet; bind one before writing"
        assert await store.count(RowFilter(statuses=None)) == 0
    finally:
        await store.close()


async def test_binding_another_model_is_refused_naming_both(tmp_path: Path) -> None:
    store = await _bound(tmp_path / "m.db")
    try:
        with pytest.raises(EmbedderMismatch) as raised:
            await store.bind_embedding(EmbeddingSpec(model="other-8d", dimension=8))
        assert str(raised.value) == (
            "this store holds vectors from 'conformance-4d' (4-d) but the embedder is"
            " 'other-8d' (8-d); open it with the same embedder or use another store"
        )
        assert await store.embedding() == CONFORMANCE_SPEC
    finally:
        await store.close()


async def test_files_it_cannot_use_are_refused_in_one_line_naming_them(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    inside_a_file = tmp_path / "a-file" / "m.db"
    with pytest.raises(StoreError) as raised:
        await SQLiteStore(inside_a_file).connect()
    assert str(raised.value) == (
        f"cannot create the store {str(inside_a_file)!r}: {str(tmp_path / 'a-file')!r}"
        " is not a folder"
    )
    folder = tmp_path / "a-folder"
    folder.mkdir()
    with pytest.raises(StoreError) as raised:
        await SQLiteStore(folder).connect()
    assert str(raised.value) == (
        f"the store {str(folder)!r} failed: CantOpenError: unable to open database file"
    )
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"these are my notes, not a database" * 100)
    with pytest.raises(StoreError) as raised:
        await SQLiteStore(notes).connect()
    assert str(raised.value) == (
        f"{str(notes)!r} is not a SQLite database (corrupt or another kind of file)"
    )
    assert _open_connections(notes) == 0
    broken = tmp_path / "broken.db"
    await (await _bound(broken)).close()
    data = bytearray(broken.read_bytes())
    data[2 * 4096 :] = b"\x5a" * (len(data) - 2 * 4096)  # every page after the first two
    broken.write_bytes(bytes(data))
    with pytest.raises(StoreError) as raised:
        await SQLiteStore(broken).connect()
    assert str(raised.value) == f"{str(broken)!r} is corrupt: database disk image is malformed"
    assert _open_connections(broken) == 0


async def test_a_lock_held_too_long_fails_after_the_stores_own_timeout(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    store = await _bound(path, busy_timeout=1)
    other = apsw.Connection(str(path))
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    started = time.monotonic()
    try:
        with pytest.raises(StoreError) as raised:
            await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
    finally:
        other.execute("ROLLBACK")
        other.close()
    waited = time.monotonic() - started
    assert str(raised.value) == (
        f"the store {str(path)!r} stayed locked by another process for over 1 s;"
        " try again when it is less busy"
    )
    assert 0.9 <= waited < 6, waited  # its own second, not the default ten
    await store.close()


async def test_reads_reuse_their_connections(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = await _bound(path)
    try:
        for _ in range(30):
            assert await store.count(RowFilter()) == 0
        async with anyio.create_task_group() as tg:
            for _ in range(30):
                tg.start_soon(store.count, RowFilter())
        # The writer and at most one reader per worker thread (four read at once).
        assert _open_connections(path) <= 5
    finally:
        await store.close()
    assert _open_connections(path) == 0


async def test_stats_name_the_backend_its_file_and_its_size(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = await _bound(path)
    try:
        await store.write([w(make_row("a"), vec(1, 0, 0, 0))], [])
        stats = await store.stats()
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert (stats.backend, stats.location, stats.rows) == ("sqlite", str(path), 1)
        assert stats.size_bytes == sum(p.stat().st_size for p in files if p.exists()) > 0
    finally:
        await store.close()


async def test_a_scan_pages_through_every_row_once(tmp_path: Path) -> None:
    store = await _bound(tmp_path / "m.db")
    try:
        rows = [make_row(f"r{i}", at=i) for i in range(7)]
        await store.write([w(r, vec(1, i, 0, 0)) for i, r in enumerate(rows)], [])
        for size in (1, 3, 7, 8):
            assert [r.row_id async for r in store.scan(RowFilter(), batch_size=size)] == [
                r.row_id for r in rows
            ]
    finally:
        await store.close()


async def test_a_handle_held_across_a_move_to_a_new_dimension_says_to_reopen(
    tmp_path: Path,
) -> None:
    """Another handle moved the store to a 13-d model: this one's 26-d searches fail in
    the driver; the error says what happened and what to do."""
    path = tmp_path / "m.db"
    new = TinyEmbedder(name="tiny-13", dimension=13)
    async with Memory.open(path, embedder=TinyEmbedder()) as held:
        await held.remember(NewRow(content="crows at dawn", namespace="ops"))
        async with Memory.open(path, embedder=TinyEmbedder()) as other:
            await other.reembed(new)
        with pytest.raises(EmbedderMismatch) as raised:
            await held.store.vector_search(
                np.ones(26, dtype=np.float32) / np.sqrt(26), RowFilter(), limit=3
            )
        assert str(raised.value) == (
            "this store moved to 'tiny-13' (13-d) after it was opened here (a re-embed"
            " through another handle or process); vectors from 'tiny-letters' (26-d) are"
            " refused and nothing was written: reopen the store with the 'tiny-13' embedder"
        )
