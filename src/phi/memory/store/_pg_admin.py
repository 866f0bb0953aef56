"""Upgrades, backups and restores of a PostgreSQL store (`StoreAdmin`).

Backups are PostgreSQL's own: `pg_dump` in custom format of the store's schema only (the
first on the URL's search path; a database may hold several stores), one repeatable-read
snapshot however long the dump takes while others write. The dumping session holds the
migration lock shared, so no upgrade changes the schema under it. `pg_restore` brings a
dump back into the schema it was taken from, in one transaction. Neither program ever sees
a password on its command line or in its environment: a URL that carries one is handed
over without it, with a private password file (`passfile=`) that holds it.

A dump names its schema in every statement, and PostgreSQL cannot restore it under
another name: a restore goes into a store whose schema has the dump's name (the same
database after a loss, or another database or server).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import anyio
import psycopg
from psycopg import sql

from phi.errors import RestoreTargetNotEmpty, StoreError

# The presence count of `_pg_bulk` (every open store's pool holds its lock), reused.
from phi.memory.store._pg_bulk import _others_present, schema_key
from phi.memory.store._pg_schema import (
    MIGRATION_LOCK,
    Conn,
    apply_migrations,
    cluster,
    code_version_names,
    missing_schema,
    schema_version,
    vacuum,
)
from phi.memory.store._pg_write import settle
from phi.memory.store._schema_version import SchemaChange, SchemaVersion, pending_migrations
from phi.private import make_private, write_private
from phi.redact import redact, redact_url

__all__ = ["PostgresAdmin"]

CONNECT_TIMEOUT_S = 10
DATA_TABLES = ("rows", "learning_state", "model_calls")
_MIGRATIONS_ENTRY = re.compile(r"^\d+; \d+ \d+ TABLE DATA (.+) phi_migrations \S+$")


class PostgresAdmin:
    """`StoreAdmin` of the PostgreSQL store at `url`; `tools`: the folder of `pg_dump` and
    `pg_restore` (None: found on `PATH`)."""

    def __init__(self, url: str, *, tools: Path | None) -> None:
        self._url = url
        self._tools = tools

    @property
    def location(self) -> str:
        return redact_url(self._url)

    async def _connect(self) -> tuple[Conn, str]:
        """An autocommit session of the store, and its schema (which must exist)."""
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
        except psycopg.Error as exc:
            # psycopg's refusal spans lines (a hint on the second): the CLI says one.
            reason = " ".join(str(exc).split())
            raise StoreError(
                f"cannot open the PostgreSQL store at {self.location!r}: {reason}"
            ) from exc
        if (missing := await missing_schema(conn)) is not None:
            await conn.close()
            raise StoreError(f"schema {missing!r} of {self.location!r} does not exist")
        cur = await conn.execute("SELECT current_schema()")
        (schema,) = await cur.fetchone() or ("",)
        return conn, str(schema)

    async def _connect_store(self) -> Conn:
        """`_connect`, refusing a schema that holds no phi store (nothing to maintain)."""
        conn, _ = await self._connect()
        try:
            version = await schema_version(conn)
        except psycopg.Error as exc:
            await conn.close()
            raise StoreError(f"PostgreSQL store {self.location!r}: {exc}") from exc
        if version.number == 0:
            await conn.close()
            raise StoreError(f"no phi memory store at {self.location!r}")
        return conn

    async def upgrade(self) -> SchemaChange:
        conn, _ = await self._connect()
        async with conn:
            try:
                before = await schema_version(conn)
                if before.number == 0:
                    raise StoreError(f"no phi memory store at {self.location!r}")
                applied = await apply_migrations(conn, upgrade=True)
                after = await schema_version(conn)
            except psycopg.Error as exc:
                raise StoreError(f"PostgreSQL store {self.location!r}: {exc}") from exc
        return SchemaChange(before=before, after=after, applied=tuple(applied))

    async def cluster(self) -> None:
        """Rewrite the store's rows and vectors in namespace order again (`_pg_schema.cluster`)
        and vacuum them: rows written since the last bulk load or clustering sit wherever
        there was room, so a scoped search reads more scattered pages as a store grows.
        Each table is locked while it is rewritten (every session of the store waits), and
        wide vectors' HNSW index is rebuilt with them: run it when the store is quiet."""
        conn = await self._connect_store()
        async with conn:
            try:
                await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
                try:
                    async with conn.transaction():
                        await cluster(conn)
                    await vacuum(conn)
                finally:
                    await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
            except psycopg.Error as exc:
                raise StoreError(f"PostgreSQL store {self.location!r}: {exc}") from exc

    async def settle(self, *, batch: int = 1000) -> int:
        """Put every fresh vector into the HNSW graph (`_pg_write.settle`), a batch per
        transaction, outside the write lock (writes go on meanwhile); return how many."""
        conn = await self._connect_store()
        settled = 0
        async with conn:
            try:
                while True:
                    async with conn.transaction():
                        done = await settle(conn, batch)
                    settled += done
                    if done < batch:
                        return settled
            except psycopg.Error as exc:
                raise StoreError(f"PostgreSQL store {self.location!r}: {exc}") from exc

    async def backup(self, destination: Path) -> SchemaVersion:
        if await anyio.Path(destination).exists():
            raise StoreError(f"{str(destination)!r} exists; give a new file for the backup")
        conn, schema = await self._connect()
        async with conn:
            # Held until the dump is written: an upgrade waits, so the version is the dump's.
            await conn.execute("SELECT pg_advisory_lock_shared(%s)", (MIGRATION_LOCK,))
            version = await schema_version(conn)
            if version.number == 0:
                raise StoreError(f"no phi memory store at {self.location!r} to back up")
            with tempfile.TemporaryDirectory(dir=destination.parent, prefix=".phi-backup-") as d:
                partial = Path(d) / destination.name  # in a 0700 folder while it is written
                await self._tool(
                    "pg_dump",
                    "--format=custom",
                    f"--schema={_pattern(schema)}",
                    "--no-owner",
                    "--no-privileges",
                    f"--file={partial}",
                    work=Path(d),
                )
                make_private(partial)
                partial.replace(destination)
        return version

    async def restore(self, source: Path, *, replace: bool) -> SchemaVersion:
        if not await anyio.Path(source).is_file():
            raise StoreError(f"no backup at {str(source)!r}")
        with tempfile.TemporaryDirectory(prefix="phi-restore-") as d:
            work = Path(d)
            listing = await self._tool("pg_restore", "--list", str(source), work=work, db=False)
            dumped = _dumped_schema(listing, source)
            data = await self._tool(
                "pg_restore",
                "--data-only",
                f"--schema={dumped}",
                "--table=phi_migrations",
                "--file=-",
                str(source),
                work=work,
                db=False,
            )
            names = _copied_names(data, dumped)
            pending_migrations(names, code_version_names(), upgrade=True)
            conn, schema = await self._connect()
            async with conn:
                if schema != dumped:
                    raise StoreError(
                        f"{str(source)!r} is a backup of schema {dumped!r}; restore it through"
                        f" a URL whose search path names {dumped!r} first (this one names"
                        f" {schema!r})"
                    )
                await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
                await self._clear(conn, schema, replace=replace)
                # The schema exists (the URL needs it): every entry but its creation.
                kept = [line for line in listing.splitlines() if " SCHEMA - " not in line]
                (work / "restore.list").write_text("\n".join(kept) + "\n")
                await self._tool(
                    "pg_restore",
                    "--single-transaction",
                    "--exit-on-error",
                    "--no-owner",
                    "--no-privileges",
                    f"--use-list={work / 'restore.list'}",
                    str(source),
                    work=work,
                )
        return SchemaVersion.of(names)

    async def _clear(self, conn: Conn, schema: str, *, replace: bool) -> None:
        """Drop the store's tables, after checking that it may be overwritten and that no
        other session has it open (their statements would fail on dropped tables)."""
        cur = await conn.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace"
            " AND c.relkind IN ('r', 'p') AND NOT EXISTS (SELECT 1 FROM pg_depend d"
            " WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')"
        )
        tables = [name for (name,) in await cur.fetchall()]
        if not tables:
            return
        held = {}
        for table in DATA_TABLES:
            if table in tables:
                cur = await conn.execute(f"SELECT count(*) FROM {table}")
                (n,) = await cur.fetchone() or (0,)
                if n:
                    held[table] = int(n)
        if "phi_migrations" not in tables or (held and not replace):
            what = ", ".join(f"{n} {t.replace('_', ' ')}" for t, n in held.items()) or (
                f"{len(tables)} tables that are not a phi store's"
            )
            raise RestoreTargetNotEmpty(
                f"schema {schema!r} of {self.location!r} holds data ({what}); restore into"
                " an empty schema" + (", or add --replace to overwrite it" if held else "")
            )
        if n := await _others_present(conn, schema_key(schema), {conn.info.backend_pid}):
            raise StoreError(
                f"the store {self.location!r} is open in {n} other session(s); stop the phi"
                " processes using it before restoring over it"
            )
        async with conn.transaction():
            for table in tables:
                await conn.execute(
                    sql.SQL("DROP TABLE IF EXISTS {} CASCADE").format(sql.Identifier(table))
                )

    async def _tool(self, name: str, *args: str, work: Path, db: bool = True) -> str:
        """Run `pg_dump` or `pg_restore` (with the store's database unless not `db`);
        return its standard output."""
        program = self._tools / name if self._tools else shutil.which(name)
        if program is None or not await anyio.Path(program).is_file():
            where = f"in {str(self._tools)!r}" if self._tools else "on PATH"
            raise StoreError(f"no {name} {where}; install PostgreSQL's client programs")
        command = [str(program), *args]
        if db:
            command.append(f"--dbname={_without_password(self._url, work)}")
        result = await anyio.run_process(command, check=False)
        if result.returncode != 0:
            lines = result.stderr.decode(errors="replace").strip().splitlines()
            said = redact(lines[-1]) if lines else f"exit status {result.returncode}"
            raise StoreError(f"{name} failed for {self.location!r}: {said}")
        return result.stdout.decode()


def _pattern(schema: str) -> str:
    """`schema` as a pg_dump name pattern matching it alone (quoted: no wildcards)."""
    return '"' + schema.replace('"', '""') + '"'


def _without_password(url: str, work: Path) -> str:
    """`url` with its password (if any) moved to a private password file in `work`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    secret = parts.password.replace("\\", "\\\\").replace(":", "\\:")
    passfile = write_private(work / "pgpass", f"*:*:*:*:{secret}\n")
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "passfile"]
    query.append(("passfile", str(passfile)))
    return urlunsplit(
        parts._replace(
            netloc=f"{quote(user, safe='')}@{netloc}" if user else netloc,
            query=urlencode(query, quote_via=quote),
        )
    )


def _dumped_schema(listing: str, source: Path) -> str:
    for line in listing.splitlines():
        if found := _MIGRATIONS_ENTRY.match(line):
            return found.group(1)
    raise StoreError(f"{str(source)!r} is not a backup of a phi memory store")


def _copied_names(script: str, schema: str) -> list[str]:
    """The migration names in `pg_restore`'s script of the `phi_migrations` data."""
    names, inside = [], False
    for line in script.splitlines():
        if line.startswith("COPY ") and ".phi_migrations " in line:
            inside = True
        elif inside and line == "\\.":
            break
        elif inside:
            names.append(line.split("\t", 1)[0])
    if not names:
        raise StoreError(f"the backup of schema {schema!r} records no migrations")
    return names
