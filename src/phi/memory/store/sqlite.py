"""The default store: one SQLite file with sqlite-vec for vectors and FTS5 for BM25.

One writer connection takes every write inside `BEGIN IMMEDIATE`; reads run on worker
threads with a connection each. WAL mode lets another process read while phi writes, and
several processes may write: each write waits its turn (busy timeout) and decides row
identity inside its transaction. A driver error never leaves this module raw: it becomes
a `StoreError` naming the store. The SQL itself lives in `_sqlite_sql`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
import apsw
import numpy as np
import numpy.typing as npt

from phi.errors import EmbedderMismatch, PhiError, StoreError
from phi.memory.model import Edge, Row
from phi.memory.store import _sqlite_forget as forget_sql
from phi.memory.store import _sqlite_learning as learning_sql
from phi.memory.store import _sqlite_queue as queue_sql
from phi.memory.store import _sqlite_reembed as reembed_sql
from phi.memory.store import _sqlite_sql as sql
from phi.memory.store._delegating import Answer, DelegatingStore, QueryModules, sync_answer
from phi.memory.store._sqlite_schema import (
    BUSY_TIMEOUT_MS,
    apply_migrations,
    check_identity,
    create_vector_table,
    open_connection,
    prepare_connection,
)
from phi.memory.store.base import (
    EmbeddingSpec,
    Hit,
    HybridQuery,
    HybridSignals,
    RowFilter,
    RowWrite,
    StoreStats,
)
from phi.private import make_private, private_file

__all__ = ["SQLiteStore"]

T = TypeVar("T")


class SQLiteStore(DelegatingStore[apsw.Connection]):
    """A memory store in one SQLite file: a `RowStore` and a `Ledger` (a `Store`). The
    methods that only run one query of the SQL modules are `DelegatingStore`'s."""

    _queries = QueryModules(
        rows=sql,
        writes=sql,
        forget=forget_sql,
        queue=queue_sql,
        reembed=reembed_sql,
        ledger=learning_sql,
    )

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = BUSY_TIMEOUT_MS / 1000,
        auto_upgrade: bool | None = None,
    ) -> None:
        """A store at `path`; `busy_timeout` is how many seconds a write waits for another
        process's lock before it fails with `StoreError`. `auto_upgrade` (default on: one
        file has one user, who runs one phi) lets `connect` apply this phi's pending
        migrations; off, a store behind it is refused (`SchemaBehind`)."""
        self._path = Path(path)
        self._auto_upgrade = True if auto_upgrade is None else auto_upgrade
        self._busy_ms = int(busy_timeout * 1000)
        self._writer: apsw.Connection | None = None
        self._write_lock = anyio.Lock()
        self._local = threading.local()
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self._read_limiter = anyio.CapacityLimiter(4)
        self._embedding: EmbeddingSpec | None = None

    @property
    def location(self) -> str:
        return str(self._path)

    # -- connections -------------------------------------------------------------------

    async def connect(self) -> None:
        await anyio.to_thread.run_sync(self._connect_sync)

    def _connect_sync(self) -> None:
        try:
            # Created 0600 before SQLite opens it (it would make it 0644 under the usual
            # umask), so its -wal and -shm, which copy the database's mode, are 0600 too.
            private_file(self._path)
        except OSError as exc:
            raise StoreError(
                f"cannot create the store {str(self._path)!r}: {exc.strerror or exc}"
            ) from exc
        conn: apsw.Connection | None = None
        try:
            conn = open_connection(self._path, busy_timeout_ms=self._busy_ms)
            # Read-only first: a foreign file is refused before WAL mode writes to it.
            check_identity(conn, self._path)
            prepare_connection(conn)
            make_private(self._path)  # a -wal/-shm left 0644 by an older phi
            apply_migrations(conn, self._path, upgrade=self._auto_upgrade)
            self._embedding = self._read_embedding(conn)
            if self._embedding is not None:
                create_vector_table(conn, self._embedding.dimension)
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, apsw.Error):
                raise self._store_error(exc) from exc
            raise
        self._writer = conn

    def _store_error(self, exc: apsw.Error) -> StoreError:
        """The one place a driver error becomes phi's."""
        where = repr(str(self._path))
        if isinstance(exc, apsw.NotADBError):
            return StoreError(f"{where} is not a SQLite database (corrupt or another kind of file)")
        if isinstance(exc, apsw.CorruptError):
            return StoreError(f"{where} is corrupt: {exc}")
        if isinstance(exc, apsw.BusyError | apsw.LockedError):
            return StoreError(
                f"the store {where} stayed locked by another process for over"
                f" {self._busy_ms / 1000:g} s; try again when it is less busy"
            )
        return StoreError(f"the store {where} failed: {type(exc).__name__}: {exc}")

    async def close(self) -> None:
        # A fresh thread-local: worker threads outlive this store's connections, and the
        # old one would hand a closed (or, before, a kept-open) reader to the next connect().
        self._local = threading.local()
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _reader(self) -> apsw.Connection:
        local = self._local
        conn: apsw.Connection | None = getattr(local, "conn", None)
        if conn is None:
            conn = open_connection(
                self._path, flags=apsw.SQLITE_OPEN_READWRITE, busy_timeout_ms=self._busy_ms
            )
            prepare_connection(conn)
            local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    async def _read(self, fn: Callable[[apsw.Connection], T]) -> T:
        if self._writer is None:
            raise StoreError("the store is not connected; use `async with Memory.open(...)`")

        def run() -> T:
            try:
                conn = self._reader()
                with conn:  # one read transaction: a consistent snapshot
                    result = fn(conn)
            except apsw.Error as exc:
                raise self._read_error(exc) from exc
            return result

        return await anyio.to_thread.run_sync(run, limiter=self._read_limiter)

    def _read_error(self, exc: apsw.Error) -> PhiError:
        """A failed read, as phi's error. In a handle opened before another moved the store
        to a new model, an old-model query vector fails against the new vectors: say that
        (reopen), not the driver's dimension mismatch."""
        try:
            moved = reembed_sql.moved(self._reader(), self._embedding)
        except apsw.Error:
            moved = None
        return moved or self._store_error(exc)

    async def _write(self, fn: Callable[[apsw.Connection], T]) -> T:
        writer = self._writer
        if writer is None:
            raise StoreError("the store is not connected; use `async with Memory.open(...)`")

        def run() -> T:
            try:
                writer.execute("BEGIN IMMEDIATE")
                try:
                    result = fn(writer)
                except BaseException:
                    writer.execute("ROLLBACK")
                    raise
                writer.execute("COMMIT")
            except apsw.Error as exc:
                raise self._store_error(exc) from exc
            return result

        async with self._write_lock:
            return await anyio.to_thread.run_sync(run)

    async def _read_query(self, query: Callable[[apsw.Connection], Answer[T]]) -> T:
        return await self._read(partial(sync_answer, query))

    async def _write_query(self, query: Callable[[apsw.Connection], Answer[T]]) -> T:
        return await self._write(partial(sync_answer, query))

    # -- embedding ---------------------------------------------------------------------

    @staticmethod
    def _read_embedding(conn: apsw.Connection) -> EmbeddingSpec | None:
        meta: dict[str, str] = {k: v for k, v in conn.execute("SELECT key, value FROM phi_meta")}
        if "embedding_model" not in meta:
            return None
        return EmbeddingSpec(model=meta["embedding_model"], dimension=int(meta["embedding_dim"]))

    async def bind_embedding(self, spec: EmbeddingSpec) -> None:
        def bind(conn: apsw.Connection) -> EmbeddingSpec:
            stored = self._read_embedding(conn)
            if stored is None:
                conn.executemany(
                    "INSERT INTO phi_meta (key, value) VALUES (?, ?)",
                    [("embedding_model", spec.model), ("embedding_dim", str(spec.dimension))],
                )
                create_vector_table(conn, spec.dimension)
                return spec
            if stored != spec:
                raise EmbedderMismatch(
                    stored=stored.model,
                    stored_dim=stored.dimension,
                    given=spec.model,
                    given_dim=spec.dimension,
                )
            return stored

        self._embedding = await self._write(bind)

    # -- writes ------------------------------------------------------------------------

    async def write(
        self,
        rows: Sequence[RowWrite],
        edges: Sequence[Edge],
        *,
        superseded: Sequence[str] = (),
        at: datetime | None = None,
    ) -> list[Row]:
        dimension = self._dimension()
        held, vectors = self._embedding, any(item.vector is not None for item in rows)

        def write(conn: apsw.Connection) -> list[Row]:
            # Another handle may have moved the store to a new model since this one read it.
            if vectors and (moved := reembed_sql.moved(conn, held)) is not None:
                raise moved
            stored = [sql.upsert_row(conn, item, dimension) for item in rows]
            # A row already stored under the same identity stands in for the one given.
            renamed = {
                item.row.row_id: row.row_id
                for item, row in zip(rows, stored, strict=True)
                if row.row_id != item.row.row_id
            }
            if renamed:
                edges_to_write: Sequence[Edge] = [
                    dataclasses.replace(
                        e, src=renamed.get(e.src, e.src), dst=renamed.get(e.dst, e.dst)
                    )
                    for e in edges
                ]
            else:
                edges_to_write = edges
            sql.insert_edges(conn, edges_to_write)
            # A race can make a new row collapse onto the very row it supersedes: keep it.
            kept = {row.row_id for row in stored}
            retired = [old for old in superseded if old not in kept]
            if retired:
                sql.set_status(conn, retired, "superseded", at or datetime.now(UTC))
            return stored

        return await self._write(write)

    @asynccontextmanager
    async def bulk_load(self) -> AsyncIterator[bool]:
        # Nothing to defer: sqlite-vec's vec0 table keeps no graph to update per row.
        yield False

    # -- reads -------------------------------------------------------------------------

    def _query_blob(self, vector: npt.NDArray[np.float32]) -> bytes:
        dimension = self._dimension()
        if vector.shape != (dimension,):
            raise StoreError(
                f"query vector of shape {vector.shape} does not fit this store ({dimension}-d)"
            )
        return vector.astype(np.float32).tobytes()

    async def hybrid(self, query: HybridQuery) -> HybridSignals:
        # One read transaction for every step: a search costs one trip to a worker thread.
        blob = self._query_blob(query.vector)

        def read(conn: apsw.Connection) -> HybridSignals:
            signals = sql.hybrid(conn, blob, query)
            waiting = queue_sql.count_unembedded(conn, query.where)
            return dataclasses.replace(signals, unembedded=waiting)

        return await self._read(read)

    async def vector_search(
        self, vector: npt.NDArray[np.float32], where: RowFilter, *, limit: int
    ) -> list[Hit]:
        (hits,) = await self.vector_search_many([(vector, where)], limit=limit)
        return hits

    async def vector_search_many(
        self, queries: Sequence[tuple[npt.NDArray[np.float32], RowFilter]], *, limit: int
    ) -> list[list[Hit]]:
        if self._embedding is None or limit <= 0:
            return [[] for _ in queries]
        blobs = [(self._query_blob(vector), where) for vector, where in queries]
        k = min(limit, sql.MAX_KNN)

        def search(conn: apsw.Connection) -> list[list[Hit]]:
            return [sql.knn(conn, blob, where, k) for blob, where in blobs]

        return await self._read(search)

    async def text_search(self, terms: Sequence[str], where: RowFilter, *, limit: int) -> list[Hit]:
        return await self._read(partial(sql.bm25, terms=terms, where=where, limit=limit))

    async def vector_scores(
        self, vector: npt.NDArray[np.float32], row_ids: Sequence[str]
    ) -> dict[str, float]:
        blob = self._query_blob(vector)
        return await self._read(partial(sql.cosine_of, blob=blob, row_ids=row_ids))

    async def text_scores(
        self, terms: Sequence[str], row_ids: Sequence[str], where: RowFilter
    ) -> dict[str, float]:
        return await self._read(partial(sql.bm25_of, terms=terms, row_ids=row_ids, where=where))

    async def latest_many(self, wheres: Sequence[RowFilter], *, limit: int) -> list[list[Row]]:
        return await self._read(lambda conn: [sql.latest(conn, w, limit) for w in wheres])

    async def scan(self, where: RowFilter, *, batch_size: int = 500) -> AsyncIterator[Row]:
        after: tuple[float, int] = (float("-inf"), -1)
        while True:
            batch = await self._read(
                partial(sql.scan_batch, where=where, after=after, size=batch_size)
            )
            for row, _ in batch:
                yield row
            if len(batch) < batch_size:
                return
            after = batch[-1][1]

    async def stats(self) -> StoreStats:
        rows, edges, namespaces = await self._read(sql.totals)
        files = (self._path, Path(f"{self._path}-wal"), Path(f"{self._path}-shm"))
        size = sum(p.stat().st_size for p in files if p.exists())
        return StoreStats(
            location=self.location,
            backend="sqlite",
            embedding=self._embedding,
            rows=rows,
            edges=edges,
            namespaces=namespaces,
            size_bytes=size,
        )

    # -- the embedding queue ------------------------------------------------------------

    async def add_vectors(
        self, vectors: Mapping[str, npt.NDArray[np.float32]], edges: Sequence[Edge]
    ) -> None:
        dimension, held = self._dimension(), self._embedding

        def add(conn: apsw.Connection) -> None:
            if (moved := reembed_sql.moved(conn, held)) is not None:  # as in `write`
                raise moved
            queue_sql.insert_vectors(conn, vectors=vectors, edges=edges, dimension=dimension)

        await self._write(add)
