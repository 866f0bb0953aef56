"""Schema versions: a store from a newer phi refused and left unchanged, a store behind
refused when upgrades are not automatic, `phi memory upgrade`, and two upgraders at once
(two processes on one SQLite file; two on one PostgreSQL schema)."""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
from pathlib import Path

import anyio
import apsw
import psycopg
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.errors import SchemaBehind, SchemaTooNew
from phi.memory import Memory, NewRow
from phi.memory.backup import upgrade
from phi.memory.store import PostgresStore, SQLiteStore, _pg_schema, _sqlite_schema
from tests.memory.backup_checks import ROOT
from tests.memory.conftest import TinyEmbedder
from tests.postgres.schemas import fresh_schema

pytestmark = pytest.mark.anyio

UPGRADER = textwrap.dedent(
    """
    import json, sys, anyio
    from phi.memory.backup import upgrade

    async def main():
        print("ready", flush=True)
        sys.stdin.readline()
        report = await upgrade(sys.argv[1])
        print(json.dumps([list(report.applied), report.after.number]), flush=True)

    anyio.run(main)
    """
)


async def _two_upgraders(location: str) -> list[tuple[list[str], int]]:
    """Two processes told to upgrade `location` at the same moment: what each reports."""
    procs = [
        await anyio.open_process([sys.executable, "-c", UPGRADER, location], cwd=ROOT)
        for _ in range(2)
    ]
    buffers = [b""] * len(procs)

    async def line(i: int) -> str:
        stdout = procs[i].stdout
        assert stdout is not None
        while b"\n" not in buffers[i]:
            buffers[i] += await stdout.receive()
        text, buffers[i] = buffers[i].split(b"\n", 1)
        return text.decode()

    try:
        with anyio.fail_after(120):
            assert [await line(i) for i in range(len(procs))] == ["ready", "ready"]
            for proc in procs:
                assert proc.stdin is not None
                await proc.stdin.send(b"go\n")
            outs = []
            for i in range(len(procs)):
                applied, number = json.loads(await line(i))
                outs.append((applied, number))
            assert [await proc.wait() for proc in procs] == [0, 0]
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
            await proc.aclose()
    return outs


# -- SQLite -------------------------------------------------------------------------


async def _sqlite_store(path: Path) -> None:
    async with Memory.open(path, embedder=TinyEmbedder()) as memory:
        await memory.remember(NewRow(content="likes rust", namespace="alice"))


def _back_to_version_5(path: Path) -> None:
    """The store as phi left it before migration 6 (as its own test of m006 does)."""
    conn = apsw.Connection(str(path))
    conn.execute("ALTER TABLE rows DROP COLUMN written_by")
    conn.execute("DELETE FROM phi_migrations WHERE name = 'm007_written_by'")
    conn.execute("DROP INDEX embed_queue_namespace")
    conn.execute("ALTER TABLE embed_queue DROP COLUMN namespace")
    conn.execute("DELETE FROM phi_migrations WHERE name = 'm006_embed_queue_namespace'")
    conn.close()


async def _opens(path: Path, auto_upgrade: bool) -> None:
    store = SQLiteStore(path, auto_upgrade=auto_upgrade)
    await store.connect()
    await store.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_sqlite_store_from_a_newer_phi_is_refused_and_not_written(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    await _sqlite_store(path)
    conn = apsw.Connection(str(path))
    conn.execute("INSERT INTO phi_migrations VALUES ('m099_from_the_future', datetime('now'))")
    conn.close()
    before = _digest(path)
    ours = _sqlite_schema.code_version()
    for auto_upgrade in (True, False):
        with pytest.raises(SchemaTooNew) as caught:
            await SQLiteStore(path, auto_upgrade=auto_upgrade).connect()
        assert str(caught.value) == (
            f"this store is at schema version {ours.number + 1} (m099_from_the_future), newer"
            f" than this phi's {ours}; upgrade phi to open it (the store was left unchanged)"
        )
    with pytest.raises(SchemaTooNew):
        await upgrade(path)
    assert _digest(path) == before


def test_a_sqlite_store_behind_upgrades_on_open_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Synchronous: the CLI runs its own event loop.
    path = tmp_path / "m.db"
    anyio.run(_sqlite_store, path)
    _back_to_version_5(path)
    with pytest.raises(SchemaBehind, match=r"version 5 \(m005_embed_queue\) and this phi needs"):
        anyio.run(SQLiteStore(path, auto_upgrade=False).connect)
    # The setting reaches the CLI: refused in one line that says what to run.
    monkeypatch.setenv("PHI_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PHI_AUTO_UPGRADE", "false")
    runner = CliRunner()
    refused = runner.invoke(app, ["memory", "stats", "--db", str(path)])
    assert refused.exit_code == 2
    assert "run `phi memory upgrade` on it" in refused.output
    done = runner.invoke(app, ["memory", "upgrade", "--db", str(path)])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines() == [
        f"{path}: schema version 5 (m005_embed_queue) -> 7 (m007_written_by)",
        "  applied m006_embed_queue_namespace",
        "  applied m007_written_by",
    ]
    anyio.run(_opens, path, False)  # up to date: opens with upgrades off
    # Unset, a SQLite file upgrades itself on open.
    _back_to_version_5(path)
    monkeypatch.delenv("PHI_AUTO_UPGRADE")
    opened = runner.invoke(app, ["memory", "stats", "--db", str(path), "--json"])
    assert opened.exit_code == 2  # the store's model is not this CLI's: past the schema
    assert "tiny-letters" in opened.output
    assert anyio.run(upgrade, path).applied == ()


async def test_two_processes_upgrading_one_sqlite_file_apply_each_migration_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    await _sqlite_store(path)
    _back_to_version_5(path)
    outs = await _two_upgraders(str(path))
    assert sorted(applied for applied, _ in outs) == [
        [],
        ["m006_embed_queue_namespace", "m007_written_by"],
    ]
    assert [number for _, number in outs] == [7, 7]


# -- PostgreSQL ---------------------------------------------------------------------


async def _pg_behind(url: str) -> None:
    """A store in `url`'s schema as phi left it before migration 3."""
    store = PostgresStore(url)
    await store.connect()
    await store.close()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("DROP TABLE embed_queue")
        await conn.execute("ALTER TABLE rows DROP COLUMN written_by")
        await conn.execute(
            "DELETE FROM phi_migrations WHERE name IN"
            " ('m003_embed_queue', 'm004_written_by', 'm005_namespace_locality')"
        )


async def test_a_postgres_store_from_a_newer_phi_is_refused_and_not_written() -> None:
    async with fresh_schema() as url:
        store = PostgresStore(url)
        await store.connect()
        await store.close()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("INSERT INTO phi_migrations (name) VALUES ('m099_future')")
            with pytest.raises(SchemaTooNew, match=r"version 6 \(m099_future\), newer than"):
                await PostgresStore(url, auto_upgrade=True).connect()
            cur = await conn.execute("SELECT count(*) FROM phi_migrations")
            assert await cur.fetchone() == (6,)


async def test_a_postgres_store_behind_waits_for_an_explicit_upgrade() -> None:
    async with fresh_schema() as url:
        await _pg_behind(url)
        with pytest.raises(SchemaBehind, match=r"version 2 \(m002_learning\) and this phi"):
            await PostgresStore(url).connect()  # PostgreSQL's default: explicit upgrades
        report = await upgrade(url)
        assert (report.before.number, report.after, report.applied) == (
            2,
            _pg_schema.code_version(),
            ("m003_embed_queue", "m004_written_by", "m005_namespace_locality"),
        )
        store = PostgresStore(url)
        await store.connect()
        await store.close()


async def test_an_upgrade_waits_for_the_migration_lock_before_its_first_migration() -> None:
    async with fresh_schema() as url:
        await _pg_behind(url)
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as holder:
            await holder.execute("SELECT pg_advisory_lock(%s)", (_pg_schema.MIGRATION_LOCK,))
            async with anyio.create_task_group() as tg:
                tg.start_soon(upgrade, url)
                await anyio.sleep(1.0)
                cur = await holder.execute("SELECT count(*) FROM phi_migrations")
                assert await cur.fetchone() == (2,)  # it waits: nothing applied
                await holder.execute("SELECT pg_advisory_unlock(%s)", (_pg_schema.MIGRATION_LOCK,))
            cur = await holder.execute("SELECT count(*) FROM phi_migrations")
            assert await cur.fetchone() == (5,)


async def test_two_processes_upgrading_one_postgres_store_apply_each_migration_once() -> None:
    async with fresh_schema() as url:
        await _pg_behind(url)
        outs = await _two_upgraders(url)
        assert sorted(applied for applied, _ in outs) == [
            [],
            ["m003_embed_queue", "m004_written_by", "m005_namespace_locality"],
        ]
        assert [number for _, number in outs] == [5, 5]
