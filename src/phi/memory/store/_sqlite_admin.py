"""Upgrades, backups and restores of a SQLite store (`StoreAdmin`).

Backups and restores use SQLite's online backup API, copying every page in one step: one
read transaction on the source, so the copy is the snapshot of one moment while other
connections and processes go on writing (WAL lets them). A backup is written beside its
destination under a temporary name and renamed into place, so a file at the destination is
always a whole backup. A restore copies into the store's own file in one write
transaction: a failure leaves the store as it was.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import apsw

from phi.errors import RestoreTargetNotEmpty, StoreError
from phi.memory.store._schema_version import SchemaChange, SchemaVersion, pending_migrations
from phi.memory.store._sqlite_schema import (
    APPLICATION_ID,
    applied_migrations,
    apply_migrations,
    check_identity,
    code_version_names,
    open_connection,
    prepare_connection,
    schema_version,
)
from phi.private import make_private, private_file

__all__ = ["SQLiteAdmin"]

DATA_TABLES = ("rows", "learning_state", "model_calls")
"""What makes a store hold data (markers and edges hang off rows)."""


class SQLiteAdmin:
    """`StoreAdmin` of the SQLite store at `path`."""

    def __init__(self, path: Path) -> None:
        self._path = path

    @property
    def location(self) -> str:
        return str(self._path)

    async def upgrade(self) -> SchemaChange:
        return await anyio.to_thread.run_sync(self._upgrade)

    async def backup(self, destination: Path) -> SchemaVersion:
        return await anyio.to_thread.run_sync(self._backup, destination)

    async def restore(self, source: Path, *, replace: bool) -> SchemaVersion:
        return await anyio.to_thread.run_sync(self._restore, source, replace)

    def _existing(self, path: Path, what: str) -> apsw.Connection:
        """A connection to the phi store at `path`, which must exist."""
        if not path.is_file():
            raise StoreError(f"no {what} at {str(path)!r}")
        conn = open_connection(path, flags=apsw.SQLITE_OPEN_READWRITE)
        try:
            (app_id,) = next(conn.execute("PRAGMA application_id"))
            if app_id != APPLICATION_ID:
                raise StoreError(f"{str(path)!r} is not a phi memory store")
        except apsw.Error as exc:
            conn.close()
            raise StoreError(f"{str(path)!r} is not a phi memory store ({exc})") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _upgrade(self) -> SchemaChange:
        conn = self._existing(self._path, "memory store")
        try:
            prepare_connection(conn)  # migrations may need sqlite-vec
            make_private(self._path)
            before = schema_version(conn)
            applied = apply_migrations(conn, self._path, upgrade=True)
            return SchemaChange(before=before, after=schema_version(conn), applied=tuple(applied))
        except apsw.Error as exc:
            raise StoreError(f"the store {self.location!r} failed: {exc}") from exc
        finally:
            conn.close()

    def _backup(self, destination: Path) -> SchemaVersion:
        if destination.exists():
            raise StoreError(f"{str(destination)!r} exists; give a new file for the backup")
        source = self._existing(self._path, "memory store")
        partial = destination.with_name(f".{destination.name}.{os.getpid()}.partial")
        try:
            private_file(partial)
            copy = apsw.Connection(str(partial))
            try:
                _copy_all(copy, source)
                version = schema_version(copy)
            finally:
                copy.close()
            os.replace(partial, destination)
        except apsw.Error as exc:
            raise StoreError(f"backup of {self.location!r} failed: {exc}") from exc
        except OSError as exc:
            raise StoreError(
                f"cannot write the backup {str(destination)!r}: {exc.strerror or exc}"
            ) from exc
        finally:
            source.close()
            partial.unlink(missing_ok=True)
        return version

    def _restore(self, source: Path, replace: bool) -> SchemaVersion:
        backup = self._existing(source, "backup")
        try:
            version = schema_version(backup)
            pending_migrations(applied_migrations(backup), code_version_names(), upgrade=True)
            if self._path.exists():
                self._check_target(replace=replace)
            else:
                private_file(self._path)
            target = open_connection(self._path)
            try:
                check_identity(target, self._path)
                _copy_all(target, backup)
            finally:
                target.close()
            make_private(self._path)
        except apsw.Error as exc:
            raise StoreError(f"restore into {self.location!r} failed: {exc}") from exc
        except OSError as exc:
            raise StoreError(f"cannot write {self.location!r}: {exc.strerror or exc}") from exc
        finally:
            backup.close()
        return version

    def _check_target(self, *, replace: bool) -> None:
        conn = open_connection(self._path)
        try:
            check_identity(conn, self._path)
            held = {
                table: n
                for table in DATA_TABLES
                if _has_table(conn, table)
                and (n := next(conn.execute(f"SELECT count(*) FROM {table}"))[0])
            }
        finally:
            conn.close()
        if held and not replace:
            what = ", ".join(f"{n} {table.replace('_', ' ')}" for table, n in held.items())
            raise RestoreTargetNotEmpty(
                f"the store {self.location!r} holds data ({what}); restore into a new"
                " store, or add --replace to overwrite it"
            )


def _copy_all(destination: apsw.Connection, source: apsw.Connection) -> None:
    # One step (-1) copies every page under one read transaction of the source: a
    # consistent snapshot; steps of a few pages would restart whenever another process
    # wrote in between, and never finish under a steady stream of writes.
    with destination.backup("main", source, "main") as copier:
        copier.step(-1)


def _has_table(conn: apsw.Connection, name: str) -> bool:
    (n,) = next(conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = ?", (name,)))
    return bool(n)
