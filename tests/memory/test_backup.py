"""Backups of a SQLite store while another process writes, restored and compared; what a
restore refuses (`phi.memory.backup`, `phi memory backup | restore`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import apsw
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.errors import RestoreTargetNotEmpty, SchemaTooNew, StoreError
from phi.memory import Memory, NewRow
from phi.memory.backup import SchemaVersion, backup, restore
from phi.memory.store._sqlite_schema import code_version
from tests.memory.backup_checks import check_restored, start_writer, stop_writer
from tests.memory.conftest import TinyEmbedder

pytestmark = pytest.mark.anyio


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def _store_with_a_row(path: Path, text: str = "likes rust") -> None:
    async with Memory.open(path, embedder=TinyEmbedder()) as memory:
        await memory.remember(NewRow(content=text, namespace="alice"))


async def test_a_backup_under_writes_restores_a_consistent_snapshot(tmp_path: Path) -> None:
    source, copy, restored = tmp_path / "live.db", tmp_path / "b.db", tmp_path / "r.db"
    await _store_with_a_row(source, "seed")  # the writer must not race the store's creation
    writer = await start_writer(str(source))
    try:
        await writer.wait_for(30)
        acked_before = list(writer.acked)
        report = await backup(source, copy)
        await writer.wait_for(len(acked_before) + 20)  # it kept writing through the backup
    finally:
        await stop_writer(writer)
    assert report.version == code_version()
    assert report.size == copy.stat().st_size > 0
    assert _mode(copy) == 0o600
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".b.db")]  # no partial left
    restored_report = await restore(copy, restored)
    assert restored_report.version == code_version()
    assert _mode(restored) == 0o600
    count = await check_restored(str(restored), str(source), acked_before=[r for r in acked_before])
    assert count < len(writer.acked) + 1  # a snapshot, not the end state
    conn = apsw.Connection(str(restored))
    assert next(conn.execute("PRAGMA integrity_check")) == ("ok",)
    conn.close()


async def test_a_restore_refuses_a_store_with_data_unless_replace(tmp_path: Path) -> None:
    await _store_with_a_row(tmp_path / "a.db", "likes rust")
    await backup(tmp_path / "a.db", tmp_path / "a.backup")
    await _store_with_a_row(tmp_path / "b.db", "likes go")
    with pytest.raises(RestoreTargetNotEmpty, match=r"holds data \(1 rows\).*--replace"):
        await restore(tmp_path / "a.backup", tmp_path / "b.db")
    async with Memory.open(tmp_path / "b.db", embedder=TinyEmbedder()) as memory:
        assert [r.content async for r in memory.export()] == ["likes go"]
    await restore(tmp_path / "a.backup", tmp_path / "b.db", replace=True)
    async with Memory.open(tmp_path / "b.db", embedder=TinyEmbedder()) as memory:
        assert [r.content async for r in memory.export()] == ["likes rust"]
    # An empty store (opened, never written) is no data to protect.
    async with Memory.open(tmp_path / "empty.db", embedder=TinyEmbedder()):
        pass
    await restore(tmp_path / "a.backup", tmp_path / "empty.db")


async def test_a_backup_from_a_newer_phi_is_refused_and_nothing_written(tmp_path: Path) -> None:
    await _store_with_a_row(tmp_path / "a.db")
    conn = apsw.Connection(str(tmp_path / "a.db"))
    conn.execute("INSERT INTO phi_migrations VALUES ('m999_from_the_future', datetime('now'))")
    conn.close()
    await backup(tmp_path / "a.db", tmp_path / "a.backup")  # a backup only reads
    with pytest.raises(SchemaTooNew) as caught:
        await restore(tmp_path / "a.backup", tmp_path / "new.db")
    ours = code_version()
    assert str(caught.value) == (
        f"this store is at schema version {ours.number + 1} (m999_from_the_future), newer"
        f" than this phi's {ours}; upgrade phi to open it (the store was left unchanged)"
    )
    assert not (tmp_path / "new.db").exists()


async def test_a_backup_never_overwrites_and_needs_a_store(tmp_path: Path) -> None:
    await _store_with_a_row(tmp_path / "a.db")
    (tmp_path / "taken").write_text("mine")
    with pytest.raises(StoreError, match=r"'.*taken' exists; give a new file"):
        await backup(tmp_path / "a.db", tmp_path / "taken")
    assert (tmp_path / "taken").read_text() == "mine"
    with pytest.raises(StoreError, match=r"no memory store at '.*missing\.db'"):
        await backup(tmp_path / "missing.db", tmp_path / "b.db")
    (tmp_path / "notes.txt").write_text("not a store")
    with pytest.raises(StoreError, match="is not a phi memory store"):
        await restore(tmp_path / "notes.txt", tmp_path / "c.db")


def test_the_commands_back_up_and_restore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHI_HOME", str(tmp_path / "home"))
    runner = CliRunner()
    db = str(tmp_path / "a.db")
    assert (
        runner.invoke(app, ["memory", "add", "likes rust", "-n", "alice", "--db", db]).exit_code
        == 0
    )
    done = runner.invoke(app, ["memory", "backup", str(tmp_path / "b.db"), "--db", db, "--json"])
    assert done.exit_code == 0, done.output
    assert '"version": ' + str(code_version().number) in done.output
    again = runner.invoke(app, ["memory", "restore", str(tmp_path / "b.db"), "--db", db])
    assert again.exit_code == 2
    assert "holds data (1 rows)" in again.output and "--replace" in again.output
    fresh = str(tmp_path / "c.db")
    done = runner.invoke(app, ["memory", "restore", str(tmp_path / "b.db"), "--db", fresh])
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"restored {tmp_path / 'b.db'} (schema version {code_version()})")
    found = runner.invoke(app, ["memory", "search", "rust", "--db", fresh, "--json"])
    assert "likes rust" in found.output
    assert SchemaVersion.of(["m001_x"]).number == 1
