"""Backups of a PostgreSQL store (pg_dump / pg_restore from the bundled server) while
another process writes, restored into another database and compared."""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from phi.errors import RestoreTargetNotEmpty, StoreError
from phi.memory.backup import backup, restore
from phi.memory.store._pg_schema import code_version
from phi.postgres._process import INSTALL
from tests.memory.backup_checks import check_restored, start_writer, stop_writer
from tests.postgres.schemas import fresh_schema, in_schema, server_url

pytestmark = pytest.mark.anyio
TOOLS = Path(INSTALL)


def _schema_of(url: str) -> str:
    return url.split("search_path%3D", 1)[1].split("%2C", 1)[0]


@asynccontextmanager
async def other_database(schema: str) -> AsyncIterator[str]:
    """A URL of phi's role into a new database of the tests' server, with pgvector and an
    empty `schema`: where a backup of `schema` restores beside its source."""
    url = server_url()
    parts = urlsplit(url)
    passfile = Path(parts.query.split("passfile=", 1)[1].split("&", 1)[0])
    admin = (
        f"postgresql://postgres@{parts.hostname}:{parts.port}/postgres"
        f"?passfile={passfile.with_name('postgres.pgpass')}"
    )
    name = f"r_{uuid.uuid4().hex[:12]}"
    async with await psycopg.AsyncConnection.connect(admin, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {name} OWNER phi")
        try:
            there = admin.replace("/postgres?", f"/{name}?")
            async with await psycopg.AsyncConnection.connect(there, autocommit=True) as db:
                await db.execute("CREATE EXTENSION vector")
                await db.execute(f"CREATE SCHEMA {schema} AUTHORIZATION phi")
            yield in_schema(url.replace(f"{parts.path}?", f"/{name}?"), schema)
        finally:
            await conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


async def test_a_backup_under_writes_restores_a_consistent_snapshot(tmp_path: Path) -> None:
    copy = tmp_path / "store.dump"
    async with fresh_schema() as url:
        writer = await start_writer(url)
        try:
            await writer.wait_for(30)
            acked_before = list(writer.acked)
            report = await backup(url, copy, pg_tools=TOOLS)
            await writer.wait_for(len(acked_before) + 20)
        finally:
            await stop_writer(writer)
        assert report.version == code_version()
        assert stat.S_IMODE(copy.stat().st_mode) == 0o600
        assert not [p for p in os.listdir(tmp_path) if p.startswith(".phi-backup-")]
        async with other_database(_schema_of(url)) as target:
            restored = await restore(copy, target, pg_tools=TOOLS)
            assert restored.version == code_version()
            await check_restored(target, url, acked_before=acked_before)
            with pytest.raises(RestoreTargetNotEmpty, match="--replace"):
                await restore(copy, target, pg_tools=TOOLS)
            await restore(copy, target, replace=True, pg_tools=TOOLS)
            await check_restored(target, url, acked_before=acked_before)
        async with fresh_schema() as elsewhere:
            with pytest.raises(StoreError, match="is a backup of schema 't_"):
                await restore(copy, elsewhere, pg_tools=TOOLS)


async def test_no_password_reaches_a_command_line_or_environment(tmp_path: Path) -> None:
    """A URL with its password in it: pg_dump gets it from a private password file."""
    tools = tmp_path / "tools"
    tools.mkdir()
    seen = tmp_path / "seen"
    (tools / "pg_dump").write_text(
        f'#!/bin/sh\necho "$@" >> {seen}\nenv >> {seen}\nexec {TOOLS / "pg_dump"} "$@"\n'
    )
    os.chmod(tools / "pg_dump", 0o700)
    async with fresh_schema() as url:
        parts = urlsplit(url)
        passfile = Path(parts.query.split("passfile=", 1)[1].split("&", 1)[0])
        password = passfile.read_bytes().decode().strip().rsplit(":", 1)[1]  # noqa: ASYNC240
        with_password = url.replace("phi@", f"phi:{password}@", 1)
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("CREATE TABLE phi_migrations (name text PRIMARY KEY)")
            await conn.execute("INSERT INTO phi_migrations VALUES ('m001_initial')")
        await backup(with_password, tmp_path / "b.dump", pg_tools=tools)
    said = seen.read_text()
    assert "--schema=" in said and "passfile=" in said
    assert password not in said
    # The password file went with its folder.
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".phi-backup-")]
