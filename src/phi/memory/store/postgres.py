"""The scale-out store: PostgreSQL with pgvector, for many processes and hosts at once.

Async psycopg 3 over a connection pool. Every public write runs in one transaction that
first takes the store's write lock (a row lock, so writers queue as in SQLite while
readers never wait), which keeps the BM25 statistics exact and makes the identity upsert
safe across processes. Reads run in their own transactions. Any driver error surfaces as
`StoreError`. The SQL lives in `_pg_sql` (rows, edges, vectors, text) and `_pg_learning`
(the ledger); migrations in `_pg_schema`; BM25 scoring in `_pg_text`; vectors and postings
go in by binary COPY (`_pg_copy`); a bulk load into an empty store builds the HNSW index
once at the end (`_pg_bulk`).

The server needs PostgreSQL 13 or later with the `vector` extension (pgvector 0.8 or
later for iterative index scans); `phi postgres up` starts such a server locally.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Final, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
import numpy as np
import numpy.typing as npt
import psycopg
import psycopg_pool

from phi.errors import EmbedderMismatch, PhiError, StoreError
from phi.memory.model import Edge, Row
from phi.memory.store import _pg_bulk, _pg_forget, _pg_pool
from phi.memory.store import _pg_learning as learning_sql
from phi.memory.store import _pg_queue as queue_sql
from phi.memory.store import _pg_reembed as reembed_sql
from phi.memory.store import _pg_sql as sql
from phi.memory.store import _pg_write as write_sql
from phi.memory.store._delegating import Answer, DelegatingStore, QueryModules, async_answer
from phi.memory.store._pg_hybrid import hybrid
from phi.memory.store._pg_schema import (
    Conn,
    apply_migrations,
    create_vector_table,
    missing_schema,
)
from phi.memory.store._pg_split import SPLIT_FROM, knn_split
from phi.memory.store._pg_text import Tokenizer, query_tokens
from phi.memory.store.base import (
    EmbeddingSpec,
    Hit,
    HybridQuery,
    HybridSignals,
    RowFilter,
    RowWrite,
    StoreStats,
    gather_stepwise,
)

__all__ = ["PostgresStore"]

T = TypeVar("T")
CONNECT_TIMEOUT_S = 10.0
SPARE_WAIT_S: Final = 0.05
"""Longest a search waits for a second connection the pool said was idle (`_spare`)."""
logger = logging.getLogger(__name__)


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresStore(DelegatingStore[Conn]):
    """A memory store in a PostgreSQL database (its tables in the connection's schema).
    The methods that only run one query of the SQL modules are `DelegatingStore`'s."""

    _queries = QueryModules(
        rows=sql,
        writes=write_sql,
        forget=_pg_forget,
        queue=queue_sql,
        reembed=reembed_sql,
        ledger=learning_sql,
    )

    def __init__(
        self, url: str, *, auto_upgrade: bool | None = None, pool_max: int | None = None
    ) -> None:
        """A store at `url`. `auto_upgrade` (default off: a team's hosts share the store,
        and one host's upgrade would lock out every host still on the older phi) lets
        `connect` apply this phi's pending migrations; off, a store behind it is refused
        (`SchemaBehind`) until `phi memory upgrade`. A fresh store is always created.
        `pool_max`: connections this handle's pool may hold (default
        `_pg_pool.DEFAULT_POOL_MAX`), lowered at `connect` to what the server allows."""
        if pool_max is not None and pool_max < 1:
            raise StoreError(f"the connection pool needs at least 1 connection, not {pool_max}")
        self._url = url
        self._pool_max = _pg_pool.DEFAULT_POOL_MAX if pool_max is None else pool_max
        self._auto_upgrade = False if auto_upgrade is None else auto_upgrade
        self._pool: psycopg_pool.AsyncConnectionPool[Conn] | None = None
        self._embedding: EmbeddingSpec | None = None
        self._tokenizer: Tokenizer | None = None
        self._key = 0
        """The store's advisory lock key (its schema's), known once connected."""
        self._own_pids: set[int] = set()
        """Server processes of this store's pool (they hold its presence lock)."""

    @property
    def location(self) -> str:
        return _redacted(self._url)

    # -- connections -------------------------------------------------------------------

    async def connect(self) -> None:
        # One direct connection first: a wrong URL or a stopped server fails at once with
        # the driver's own reason, where the pool would retry until its timeout.
        try:
            async with await psycopg.AsyncConnection.connect(
                self._url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT_S)
            ) as conn:
                if (schema := await missing_schema(conn)) is not None:
                    raise StoreError(
                        f"schema {schema!r}, first on the search path of {self.location!r},"
                        f" does not exist; create it (CREATE SCHEMA {schema}) or fix the"
                        " URL's search_path"
                    )
                await apply_migrations(conn, upgrade=self._auto_upgrade)
                self._embedding = await self._read_embedding(conn)
                cur = await conn.execute("SELECT current_schema()")
                (schema,) = await cur.fetchone() or (None,)
                self._key = _pg_bulk.schema_key(str(schema))
                await _pg_bulk.recover(conn, self._key)
                room = await _pg_pool.server_room(conn)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot open the PostgreSQL store at {self.location!r}: {exc}"
            ) from exc
        bound, warning = _pg_pool.pool_bound(self._pool_max, room, where=self.location)
        if warning is not None:
            logger.warning(warning)
        pool: psycopg_pool.AsyncConnectionPool[Conn] = psycopg_pool.AsyncConnectionPool(
            self._url,
            # Two kept open: a search asks two things at once when a second is idle (`_spare`).
            min_size=min(2, bound),
            max_size=bound,
            open=False,
            timeout=CONNECT_TIMEOUT_S,
            # Reads are mostly one statement: autocommit spares them a BEGIN and a COMMIT
            # round trip each. Writes open their transaction explicitly. The name finds
            # phi's sessions in `pg_stat_activity` unless the URL or PGAPPNAME gives one.
            kwargs={"autocommit": True, "fallback_application_name": "phi"},
            configure=self._announce,
        )
        try:
            await pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
        except psycopg_pool.PoolTimeout as exc:
            await pool.close()
            raise StoreError(f"cannot open the PostgreSQL store at {self.location!r}") from exc
        self._pool = pool
        self._tokenizer = Tokenizer()

    async def _announce(self, conn: Conn) -> None:
        # Every pool connection says the store is open here (see `_pg_bulk`).
        await _pg_bulk.announce(conn, self._key)
        self._own_pids.add(conn.info.backend_pid)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._tokenizer is not None:
            self._tokenizer.close()
            self._tokenizer = None

    def _ready(self) -> tuple[psycopg_pool.AsyncConnectionPool[Conn], Tokenizer]:
        if self._pool is None or self._tokenizer is None:
            raise StoreError("the store is not connected; use `async with Memory.open(...)`")
        return self._pool, self._tokenizer

    async def _run(self, fn: Callable[[Conn], Awaitable[T]], *, write: bool) -> T:
        pool, _ = self._ready()
        try:
            async with pool.connection() as conn:
                if not write:
                    return await fn(conn)
                async with conn.transaction():
                    await write_sql.lock_writes(conn)
                    return await fn(conn)
        except psycopg.DataError as exc:
            # In a handle opened before another process moved the store to a new model, an
            # old-model query vector fails against the new vectors: say that (reopen).
            raise await self._moved_or(exc) from exc
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(f"PostgreSQL store {self.location!r}: {exc}") from exc

    async def _moved_or(self, exc: psycopg.Error) -> PhiError:
        pool, _ = self._ready()
        try:
            async with pool.connection() as conn:
                moved = await reembed_sql.moved(conn, self._embedding)
        except (psycopg.Error, psycopg_pool.PoolTimeout):
            moved = None
        return moved or StoreError(f"PostgreSQL store {self.location!r}: {exc}")

    async def _read(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        return await self._run(fn, write=False)

    async def _write(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        return await self._run(fn, write=True)

    async def _read_query(self, query: Callable[[Conn], Answer[T]]) -> T:
        return await self._read(partial(async_answer, query))

    async def _write_query(self, query: Callable[[Conn], Answer[T]]) -> T:
        return await self._write(partial(async_answer, query))

    async def _ledger_query(self, query: Callable[[Conn], Answer[T]]) -> T:
        # Ledger writes touch no row and no text statistics: they need not queue behind
        # row writes (state versions take their own per-key lock inside this transaction).
        pool, _ = self._ready()
        try:
            async with pool.connection() as conn, conn.transaction():
                return await async_answer(query, conn)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise StoreError(f"PostgreSQL store {self.location!r}: {exc}") from exc

    # -- embedding ---------------------------------------------------------------------

    @staticmethod
    async def _read_embedding(conn: Conn) -> EmbeddingSpec | None:
        cur = await conn.execute("SELECT key, value FROM phi_meta")
        meta: dict[str, str] = {key: value for key, value in await cur.fetchall()}
        if "embedding_model" not in meta:
            return None
        return EmbeddingSpec(model=meta["embedding_model"], dimension=int(meta["embedding_dim"]))

    async def bind_embedding(self, spec: EmbeddingSpec) -> None:
        async def bind(conn: Conn) -> EmbeddingSpec:
            stored = await self._read_embedding(conn)
            if stored is None:
                await conn.execute(
                    "INSERT INTO phi_meta (key, value) VALUES ('embedding_model', %s),"
                    " ('embedding_dim', %s)",
                    (spec.model, str(spec.dimension)),
                )
                await create_vector_table(conn, spec.dimension)
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

    # -- loading many rows (`_pg_bulk`) ------------------------------------------------

    @asynccontextmanager
    async def bulk_load(self) -> AsyncIterator[bool]:
        self._ready()
        try:
            loader = await _pg_bulk.begin(self._url, self._key, self._own_pids)
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL store {self.location!r}: {exc}") from exc
        if loader is None:
            yield False
            return
        try:
            yield True
        finally:
            # The index is built even when the load failed or was cancelled: the rows
            # written are stored and must be searchable.
            with anyio.CancelScope(shield=True):
                try:
                    await _pg_bulk.finish(loader)
                except psycopg.Error as exc:
                    raise StoreError(
                        f"PostgreSQL store {self.location!r}: building the vector index"
                        f" after a bulk load failed ({exc}); the next open tries again"
                    ) from exc

    def _query_vector(self, vector: npt.NDArray[np.float32]) -> sql.QueryVector:
        dimension = self._dimension()
        if vector.shape != (dimension,):
            raise StoreError(
                f"query vector of shape {vector.shape} does not fit this store ({dimension}-d)"
            )
        return sql.QueryVector.of(vector)

    # -- writes ------------------------------------------------------------------------

    async def write(
        self,
        rows: Sequence[RowWrite],
        edges: Sequence[Edge],
        *,
        superseded: Sequence[str] = (),
        at: datetime | None = None,
    ) -> list[Row]:
        return await self.upsert(rows, edges, superseded=superseded, at=at)

    async def upsert(
        self,
        rows: Sequence[RowWrite],
        edges: Sequence[Edge],
        *,
        superseded: Sequence[str] = (),
        at: datetime | None = None,
    ) -> list[Row]:
        """`write`, returning the stored row of each write in order: a row whose
        `(namespace, content_hash)` is already stored is not written again, and edges
        naming it go to the stored row."""
        dimension = self._dimension()
        _, tokenizer = self._ready()
        held, vectors = self._embedding, any(item.vector is not None for item in rows)

        async def write(conn: Conn) -> list[Row]:
            # Another process may have moved the store to a new model since this one read it.
            if vectors and (moved := await reembed_sql.moved(conn, held)) is not None:
                raise moved
            stored = await write_sql.upsert_rows(conn, rows, dimension, tokenizer)
            known: dict[str, int] = {}
            for item, (row, rid) in zip(rows, stored, strict=True):
                known[item.row.row_id] = known[row.row_id] = rid
            await write_sql.insert_edges(conn, edges, known)
            # A race can make a new row collapse onto the very row it supersedes: keep it.
            kept = {row.row_id for row, _ in stored}
            retired = [old for old in superseded if old not in kept]
            if retired:
                await write_sql.set_status(conn, retired, "superseded", at or datetime.now(UTC))
            return [row for row, _ in stored]

        return await self._write(write)

    # -- reads -------------------------------------------------------------------------

    async def hybrid(self, query: HybridQuery) -> HybridSignals:
        _, tokenizer = self._ready()
        if self._embedding is None:
            return await gather_stepwise(self, query)
        vector = self._query_vector(query.vector)
        tokens = query_tokens(tokenizer, query.terms)

        async def read(conn: Conn) -> HybridSignals:
            if not tokens:
                return await hybrid(conn, query, vector, tokens)
            async with self._spare() as beside:
                return await hybrid(conn, query, vector, tokens, beside)

        return await self._read(read)

    @asynccontextmanager
    async def _spare(self) -> AsyncIterator[Conn | None]:
        """A second connection of the pool if one is idle now, else `None` (never waits:
        a search holding one connection and waiting for another could starve a full pool,
        every search holding one). A search uses it to ask two things at once."""
        pool, _ = self._ready()
        if pool.get_stats().get("pool_available", 0) < 1:
            yield None
            return
        try:
            conn = await pool.getconn(timeout=SPARE_WAIT_S)
        except psycopg_pool.PoolTimeout:
            yield None
            return
        try:
            yield conn
        finally:
            await pool.putconn(conn)

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
        literals = [(self._query_vector(vector), where) for vector, where in queries]

        async def search(conn: Conn) -> list[list[Hit]]:
            if len(literals) < SPLIT_FROM:
                return await sql.knn_many(conn, literals, limit)
            async with self._spare() as beside:
                return await knn_split(conn, beside, literals, limit)

        return await self._read(search)

    async def text_search(self, terms: Sequence[str], where: RowFilter, *, limit: int) -> list[Hit]:
        _, tokenizer = self._ready()
        tokens = query_tokens(tokenizer, terms)
        return await self._read(partial(sql.bm25, tokens=tokens, where=where, limit=limit))

    async def vector_scores(
        self, vector: npt.NDArray[np.float32], row_ids: Sequence[str]
    ) -> dict[str, float]:
        literal = self._query_vector(vector)
        return await self._read(partial(sql.cosine_of, vector=literal, row_ids=row_ids))

    async def text_scores(
        self, terms: Sequence[str], row_ids: Sequence[str], where: RowFilter
    ) -> dict[str, float]:
        _, tokenizer = self._ready()
        tokens = query_tokens(tokenizer, terms)
        if not row_ids:
            return {}
        hits = await self._read(
            partial(sql.bm25, tokens=tokens, where=where, limit=None, row_ids=row_ids)
        )
        return {h.row_id: h.score for h in hits}

    async def latest_many(self, wheres: Sequence[RowFilter], *, limit: int) -> list[list[Row]]:
        async def many(conn: Conn) -> list[list[Row]]:
            return await sql.latest_many(conn, wheres, limit)

        return await self._read(many)

    async def scan(self, where: RowFilter, *, batch_size: int = 500) -> AsyncIterator[Row]:
        after: tuple[datetime, int] | None = None
        while True:
            batch = await self._read(
                partial(sql.scan_batch, where=where, after=after, size=batch_size)
            )
            for row, _ in batch:
                yield row
            if len(batch) < batch_size:
                return
            after = batch[-1][1]

    # -- the embedding queue (`_pg_queue`) ----------------------------------------------

    async def add_vectors(
        self, vectors: Mapping[str, npt.NDArray[np.float32]], edges: Sequence[Edge]
    ) -> None:
        dimension, held = self._dimension(), self._embedding

        async def add(conn: Conn) -> None:
            if (moved := await reembed_sql.moved(conn, held)) is not None:  # as in `upsert`
                raise moved
            await queue_sql.insert_vectors(conn, vectors=vectors, edges=edges, dimension=dimension)

        await self._write(add)

    async def stats(self) -> StoreStats:
        rows, edges, namespaces, size = await self._read(sql.totals)
        return StoreStats(
            location=self.location,
            backend="postgresql",
            embedding=self._embedding,
            rows=rows,
            edges=edges,
            namespaces=namespaces,
            size_bytes=size,
        )
