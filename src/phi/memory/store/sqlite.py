"""The default store: one SQLite file with sqlite-vec for vectors and FTS5 for BM25.

One writer connection takes every write inside `BEGIN IMMEDIATE`; reads run on worker
threads with a connection each. WAL mode lets another process read while phi writes.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio
import apsw
import numpy as np
import numpy.typing as npt

from phi.errors import EmbedderMismatch, NamespaceNotFound, RowNotFound, StoreError
from phi.memory.model import Edge, EdgeType, Row, Status
from phi.memory.store._sqlite_schema import (
    APPLICATION_ID,
    apply_migrations,
    create_vector_table,
    prepare_connection,
)
from phi.memory.store.base import (
    EmbeddingSpec,
    ForgetReport,
    Hit,
    NamespaceInfo,
    RowFilter,
    RowWrite,
    StoreStats,
)

__all__ = ["SQLiteStore"]

T = TypeVar("T")

_ROW_COLUMNS: Final = (
    "r.row_id, r.namespace, r.kind, r.content, r.content_hash, r.status, r.supersedes, r.trust, "
    "r.tags, r.source_uris, r.author, r.created_at, r.updated_at, r.meta"
)
_CHUNK: Final = 500
_MAX_KNN: Final = 4096
"""sqlite-vec's largest `k`."""


def _ts(moment: datetime) -> float:
    return moment.timestamp()


def _dt(value: float) -> datetime:
    return datetime.fromtimestamp(value, UTC)


def _row(values: Sequence[Any]) -> Row:
    (row_id, namespace, kind, content, chash, status, supersedes, trust, tags, sources, author,
     created, updated, meta) = values  # fmt: skip
    return Row(
        row_id=row_id, namespace=namespace, kind=kind, content=content, content_hash=chash,
        status=status, supersedes=supersedes, trust=trust, tags=tuple(json.loads(tags)),
        source_uris=tuple(json.loads(sources)), author=author, created_at=_dt(created),
        updated_at=_dt(updated), meta=json.loads(meta),
    )  # fmt: skip


def _nskey(namespace: str) -> str:
    return "n" + hashlib.sha1(namespace.encode()).hexdigest()[:20]


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def _chunks(values: Sequence[T]) -> Iterator[Sequence[T]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _match_expression(terms: Sequence[str]) -> str | None:
    """An FTS5 query matching any of `terms` in the content column, each term quoted."""
    quoted = ['"' + t.replace('"', '""') + '"' for t in terms if t.strip()]
    return "content : (" + " OR ".join(quoted) + ")" if quoted else None


def _where(where: RowFilter, alias: str = "r") -> tuple[str, list[Any]]:
    """SQL conditions on the rows table for a filter (always at least one condition)."""
    sql, params = ["1"], []
    if where.namespaces is not None:
        sql.append(f"{alias}.namespace IN ({_marks(where.namespaces)})")
        params += where.namespaces
    for column, values in (("kind", where.kinds), ("status", where.statuses)):
        if values is not None:
            sql.append(f"{alias}.{column} IN ({_marks(values)})")
            params += values
    for condition, value in (
        (f"{alias}.author = ?", where.author),
        (f"{alias}.thread = ?", where.thread),
        (f"{alias}.created_at >= ?", where.since and _ts(where.since)),
        (f"{alias}.created_at < ?", where.until and _ts(where.until)),
    ):
        if value is not None:
            sql.append(condition)
            params.append(value)
    return " AND ".join(sql), params


class SQLiteStore:
    """A memory store in one SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
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
        self._path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = apsw.Connection(str(self._path))
            self._check_identity(conn)
            prepare_connection(conn)
            apply_migrations(conn)
            self._embedding = self._read_embedding(conn)
            if self._embedding is not None:
                create_vector_table(conn, self._embedding.dimension)
        except apsw.NotADBError as exc:
            raise StoreError(
                f"{str(self._path)!r} is not a SQLite database (corrupt or another kind of file)"
            ) from exc
        except apsw.CorruptError as exc:
            raise StoreError(f"{str(self._path)!r} is corrupt: {exc}") from exc
        self._writer = conn

    def _check_identity(self, conn: apsw.Connection) -> None:
        (app_id,) = next(conn.execute("PRAGMA application_id"))
        (tables,) = next(conn.execute("SELECT count(*) FROM sqlite_schema"))
        if app_id != APPLICATION_ID and (app_id != 0 or tables > 0):
            raise StoreError(
                f"{str(self._path)!r} is a SQLite database of another program, not a phi memory "
                "store; choose another path"
            )

    async def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _reader(self) -> apsw.Connection:
        conn: apsw.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = apsw.Connection(str(self._path), flags=apsw.SQLITE_OPEN_READWRITE)
            prepare_connection(conn)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    async def _read(self, fn: Callable[[apsw.Connection], T]) -> T:
        if self._writer is None:
            raise StoreError("the store is not connected; use `async with Memory.open(...)`")

        def run() -> T:
            conn = self._reader()
            with conn:  # one read transaction: a consistent snapshot
                return fn(conn)

        return await anyio.to_thread.run_sync(run, limiter=self._read_limiter)

    async def _write(self, fn: Callable[[apsw.Connection], T]) -> T:
        writer = self._writer
        if writer is None:
            raise StoreError("the store is not connected; use `async with Memory.open(...)`")

        def run() -> T:
            writer.execute("BEGIN IMMEDIATE")
            try:
                result = fn(writer)
            except BaseException:
                writer.execute("ROLLBACK")
                raise
            writer.execute("COMMIT")
            return result

        async with self._write_lock:
            return await anyio.to_thread.run_sync(run)

    # -- embedding ---------------------------------------------------------------------

    @staticmethod
    def _read_embedding(conn: apsw.Connection) -> EmbeddingSpec | None:
        meta = dict(conn.execute("SELECT key, value FROM phi_meta").fetchall())
        if "embedding_model" not in meta:
            return None
        return EmbeddingSpec(model=meta["embedding_model"], dimension=int(meta["embedding_dim"]))

    async def embedding(self) -> EmbeddingSpec | None:
        return self._embedding

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
                    stored=stored.model, stored_dim=stored.dimension,
                    given=spec.model, given_dim=spec.dimension,
                )  # fmt: skip
            return stored

        self._embedding = await self._write(bind)

    # -- writes ------------------------------------------------------------------------

    async def write(self, rows: Sequence[RowWrite], edges: Sequence[Edge]) -> None:
        def write(conn: apsw.Connection) -> None:
            for item in rows:
                self._insert_row(conn, item)
            self._insert_edges(conn, edges)

        await self._write(write)

    def _insert_row(self, conn: apsw.Connection, item: RowWrite) -> None:
        row = item.row
        dimension = self._embedding.dimension if self._embedding else None
        if dimension is None or item.vector.shape != (dimension,):
            raise StoreError(
                f"vector of shape {item.vector.shape} does not fit this store ({dimension}-d)"
            )
        thread = row.meta.get("thread")
        conn.execute(
            "INSERT INTO rows (row_id, namespace, kind, content, content_hash, status, supersedes,"
            " trust, tags, source_uris, author, thread, created_at, updated_at, meta)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (row.row_id, row.namespace, row.kind, row.content, row.content_hash, row.status,
             row.supersedes, row.trust, json.dumps(list(row.tags)),
             json.dumps(list(row.source_uris)), row.author,
             thread if isinstance(thread, str) else None, _ts(row.created_at),
             _ts(row.updated_at), json.dumps(dict(row.meta), ensure_ascii=False)),
        )  # fmt: skip
        rid = conn.last_insert_rowid()
        conn.execute(
            "INSERT INTO row_vectors (id, namespace, embedding, kind, status, author, created_at)"
            " VALUES (?,?,?,?,?,?,?)",
            (rid, row.namespace, item.vector.astype(np.float32).tobytes(), row.kind, row.status,
             row.author or "", _ts(row.created_at)),
        )  # fmt: skip
        conn.execute(
            "INSERT INTO row_text (rowid, content, nskey) VALUES (?,?,?)",
            (rid, row.content, _nskey(row.namespace)),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO row_refs (ref, id) VALUES (?, ?)", [(r, rid) for r in item.refs]
        )

    @staticmethod
    def _ids(conn: apsw.Connection, row_ids: Sequence[str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for chunk in _chunks(list(dict.fromkeys(row_ids))):
            found.update(
                conn.execute(
                    f"SELECT row_id, id FROM rows WHERE row_id IN ({_marks(chunk)})", chunk
                )
            )
        return found

    def _insert_edges(self, conn: apsw.Connection, edges: Sequence[Edge]) -> None:
        if not edges:
            return
        ids = self._ids(conn, [e.src for e in edges] + [e.dst for e in edges])
        for edge in edges:
            for end in (edge.src, edge.dst):
                if end not in ids:
                    raise RowNotFound(end)
        now = _ts(datetime.now(UTC))
        conn.executemany(
            "INSERT INTO edges (src, dst, type, weight, created_at) VALUES (?,?,?,?,?)"
            " ON CONFLICT (src, dst, type) DO UPDATE SET weight = max(weight, excluded.weight)",
            [
                (ids[e.src], ids[e.dst], e.edge_type, e.weight,
                 _ts(e.created_at) if e.created_at else now)
                for e in edges if e.src != e.dst
            ],
        )  # fmt: skip

    async def add_edges(self, edges: Sequence[Edge]) -> None:
        await self._write(lambda conn: self._insert_edges(conn, edges))

    async def set_status(self, row_ids: Sequence[str], status: Status, *, at: datetime) -> None:
        def update(conn: apsw.Connection) -> None:
            ids = self._ids(conn, row_ids)
            for row_id in row_ids:
                if row_id not in ids:
                    raise RowNotFound(row_id)
            for row_id, rid in ids.items():
                conn.execute(
                    "UPDATE rows SET status = ?, updated_at = ? WHERE id = ?",
                    (status, _ts(at), rid),
                )
                conn.execute("UPDATE row_vectors SET status = ? WHERE id = ?", (status, rid))
                del row_id

        await self._write(update)

    # -- reads -------------------------------------------------------------------------

    async def get_rows(self, row_ids: Sequence[str]) -> list[Row]:
        def get(conn: apsw.Connection) -> list[Row]:
            found: dict[str, Row] = {}
            for chunk in _chunks(list(dict.fromkeys(row_ids))):
                sql = f"SELECT {_ROW_COLUMNS} FROM rows r WHERE r.row_id IN ({_marks(chunk)})"
                found.update((row.row_id, row) for row in map(_row, conn.execute(sql, chunk)))
            return [found[i] for i in row_ids if i in found]

        return await self._read(get)

    async def get_vectors(self, row_ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        def get(conn: apsw.Connection) -> dict[str, npt.NDArray[np.float32]]:
            ids = self._ids(conn, row_ids)
            out = {}
            for row_id, rid in ids.items():
                for (blob,) in conn.execute(
                    "SELECT embedding FROM row_vectors WHERE id = ?", (rid,)
                ):
                    out[row_id] = np.frombuffer(blob, dtype=np.float32).copy()
            return out

        return await self._read(get)

    async def find_by_hash(self, namespace: str, hashes: Sequence[str]) -> dict[str, Row]:
        def find(conn: apsw.Connection) -> dict[str, Row]:
            found: dict[str, Row] = {}
            for chunk in _chunks(list(dict.fromkeys(hashes))):
                sql = (
                    f"SELECT {_ROW_COLUMNS} FROM rows r WHERE r.namespace = ?"
                    f" AND r.content_hash IN ({_marks(chunk)})"
                )
                found.update(
                    (row.content_hash, row)
                    for row in map(_row, conn.execute(sql, [namespace, *chunk]))
                )
            return found

        return await self._read(find)

    async def edges(
        self, row_ids: Sequence[str], *, types: Sequence[EdgeType] | None = None
    ) -> list[Edge]:
        def get(conn: apsw.Connection) -> list[Edge]:
            ids = list(self._ids(conn, row_ids).values())
            out: list[Edge] = []
            type_sql = f" AND e.type IN ({_marks(types)})" if types else ""
            for chunk in _chunks(ids):
                sql = (
                    "SELECT s.row_id, d.row_id, e.type, e.weight, e.created_at FROM edges e"
                    " JOIN rows s ON s.id = e.src JOIN rows d ON d.id = e.dst"
                    f" WHERE (e.src IN ({_marks(chunk)}) OR e.dst IN ({_marks(chunk)})){type_sql}"
                )
                for src, dst, etype, weight, created in conn.execute(
                    sql, [*chunk, *chunk, *(types or ())]
                ):
                    out.append(
                        Edge(
                            src=src,
                            dst=dst,
                            edge_type=etype,
                            weight=weight,
                            created_at=_dt(created),
                        )
                    )
            return list(dict.fromkeys(out))

        return await self._read(get)

    async def vector_search(
        self, vector: npt.NDArray[np.float32], where: RowFilter, *, limit: int
    ) -> list[Hit]:
        if self._embedding is None or limit <= 0:
            return []
        if vector.shape != (self._embedding.dimension,):
            raise StoreError(
                f"query vector of shape {vector.shape} does not fit this store "
                f"({self._embedding.dimension}-d)"
            )
        blob = vector.astype(np.float32).tobytes()
        k = min(limit, _MAX_KNN)

        def search(conn: apsw.Connection) -> list[Hit]:
            if where.thread is not None:
                return self._exact_scan(conn, blob, where, k)
            scored: list[tuple[float, int]] = []
            for namespace in where.namespaces or (None,):
                scored += self._knn(conn, blob, namespace, where, k)
            scored.sort()
            top = scored[:k]
            names = dict(
                conn.execute(
                    f"SELECT id, row_id FROM rows WHERE id IN ({_marks(top)})", [i for _, i in top]
                )
            )
            return [Hit(row_id=names[i], score=1.0 - d) for d, i in top if i in names]

        return await self._read(search)

    @staticmethod
    def _knn(
        conn: apsw.Connection, blob: bytes, namespace: str | None, where: RowFilter, k: int
    ) -> list[tuple[float, int]]:
        sql = ["SELECT distance, id FROM row_vectors WHERE embedding MATCH ? AND k = ?"]
        params: list[Any] = [blob, k]
        if namespace is not None:
            sql.append("namespace = ?")
            params.append(namespace)
        for column, values in (("kind", where.kinds), ("status", where.statuses)):
            if values is not None:
                sql.append(f"{column} IN ({_marks(values)})")
                params += values
        for condition, value in (
            ("author = ?", where.author),
            ("created_at >= ?", where.since and _ts(where.since)),
            ("created_at < ?", where.until and _ts(where.until)),
        ):
            if value is not None:
                sql.append(condition)
                params.append(value)
        return list(conn.execute(" AND ".join(sql), params))

    @staticmethod
    def _exact_scan(conn: apsw.Connection, blob: bytes, where: RowFilter, k: int) -> list[Hit]:
        # A thread holds few rows: an exact distance over them beats a partition scan.
        cond, params = _where(where)
        sql = (
            "SELECT r.row_id, vec_distance_cosine(v.embedding, ?) AS d FROM rows r"
            f" JOIN row_vectors v ON v.id = r.id WHERE {cond} ORDER BY d LIMIT ?"
        )
        return [Hit(row_id=i, score=1.0 - d) for i, d in conn.execute(sql, [blob, *params, k])]

    async def text_search(self, terms: Sequence[str], where: RowFilter, *, limit: int) -> list[Hit]:
        match = _match_expression(terms)
        if match is None or limit <= 0:
            return []
        if where.namespaces is not None:
            keys = " OR ".join(_nskey(n) for n in where.namespaces)
            match = f"nskey : ({keys}) AND {match}"
        cond, params = _where(where)
        sql = (
            "SELECT r.row_id, -bm25(row_text, 1.0, 0.0) AS score FROM row_text"
            f" JOIN rows r ON r.id = row_text.rowid WHERE row_text MATCH ? AND {cond}"
            " ORDER BY bm25(row_text, 1.0, 0.0) LIMIT ?"
        )
        return await self._read(
            lambda conn: [
                Hit(row_id=i, score=s) for i, s in conn.execute(sql, [match, *params, limit])
            ]
        )

    async def vector_scores(
        self, vector: npt.NDArray[np.float32], row_ids: Sequence[str]
    ) -> dict[str, float]:
        blob = vector.astype(np.float32).tobytes()

        def score(conn: apsw.Connection) -> dict[str, float]:
            out: dict[str, float] = {}
            for chunk in _chunks(list(dict.fromkeys(row_ids))):
                sql = (
                    "SELECT r.row_id, vec_distance_cosine(v.embedding, ?) FROM rows r"
                    f" JOIN row_vectors v ON v.id = r.id WHERE r.row_id IN ({_marks(chunk)})"
                )
                out.update((i, 1.0 - d) for i, d in conn.execute(sql, [blob, *chunk]))
            return out

        return await self._read(score)

    async def text_scores(self, terms: Sequence[str], row_ids: Sequence[str]) -> dict[str, float]:
        match = _match_expression(terms)
        if match is None or not row_ids:
            return {}

        def score(conn: apsw.Connection) -> dict[str, float]:
            out: dict[str, float] = {}
            for chunk in _chunks(list(dict.fromkeys(row_ids))):
                sql = (
                    "SELECT r.row_id, -bm25(row_text, 1.0, 0.0) FROM row_text"
                    " JOIN rows r ON r.id = row_text.rowid"
                    f" WHERE row_text MATCH ? AND r.row_id IN ({_marks(chunk)})"
                )
                out.update(conn.execute(sql, [match, *chunk]))
            return out

        return await self._read(score)

    async def latest(self, where: RowFilter, *, limit: int) -> list[Row]:
        cond, params = _where(where)
        sql = f"SELECT {_ROW_COLUMNS} FROM rows r WHERE {cond} ORDER BY r.created_at DESC, r.id DESC LIMIT ?"
        return await self._read(lambda conn: list(map(_row, conn.execute(sql, [*params, limit]))))

    async def ref_counts(self, refs: Sequence[str]) -> dict[str, int]:
        def count(conn: apsw.Connection) -> dict[str, int]:
            out: dict[str, int] = {}
            for chunk in _chunks(list(dict.fromkeys(refs))):
                sql = f"SELECT ref, count(*) FROM row_refs WHERE ref IN ({_marks(chunk)}) GROUP BY ref"
                out.update(conn.execute(sql, chunk))
            return out

        return await self._read(count)

    async def rows_with_ref(self, ref: str, where: RowFilter, *, limit: int) -> list[str]:
        cond, params = _where(where)
        sql = (
            "SELECT r.row_id FROM row_refs f JOIN rows r ON r.id = f.id"
            f" WHERE f.ref = ? AND {cond} ORDER BY r.created_at DESC LIMIT ?"
        )
        return await self._read(
            lambda conn: [i for (i,) in conn.execute(sql, [ref, *params, limit])]
        )

    async def count(self, where: RowFilter) -> int:
        cond, params = _where(where)
        sql = f"SELECT count(*) FROM rows r WHERE {cond}"
        return await self._read(lambda conn: int(next(conn.execute(sql, params))[0]))

    async def namespaces(self, *, prefix: str | None = None) -> list[NamespaceInfo]:
        def get(conn: apsw.Connection) -> list[NamespaceInfo]:
            cond, params = (
                ("1", [])
                if prefix is None
                else ("substr(namespace, 1, ?) = ?", [len(prefix), prefix])
            )
            kinds: dict[str, dict[str, int]] = {}
            for ns, kind, n in conn.execute(
                f"SELECT namespace, kind, count(*) FROM rows WHERE {cond} GROUP BY namespace, kind",
                params,
            ):
                kinds.setdefault(ns, {})[kind] = n
            sql = (
                "SELECT namespace, count(*), sum(status = 'active'), max(created_at) FROM rows"
                f" WHERE {cond} GROUP BY namespace ORDER BY namespace"
            )
            return [
                NamespaceInfo(namespace=ns, rows=n, active=active, kinds=kinds.get(ns, {}),
                              last_created_at=_dt(last) if last is not None else None)
                for ns, n, active, last in conn.execute(sql, params)
            ]  # fmt: skip

        return await self._read(get)

    async def scan(self, where: RowFilter, *, batch_size: int = 500) -> AsyncIterator[Row]:
        cond, params = _where(where)
        after: tuple[float, int] = (float("-inf"), -1)
        while True:
            sql = (
                f"SELECT {_ROW_COLUMNS}, r.id FROM rows r WHERE {cond}"
                " AND (r.created_at, r.id) > (?, ?) ORDER BY r.created_at, r.id LIMIT ?"
            )
            batch = await self._read(
                lambda conn, a=after: list(conn.execute(sql, [*params, *a, batch_size]))  # type: ignore[misc]
            )
            for values in batch:
                yield _row(values[:-1])
            if len(batch) < batch_size:
                return
            after = (batch[-1][11], batch[-1][-1])

    async def forget(self, namespace: str) -> ForgetReport:
        def erase(conn: apsw.Connection) -> ForgetReport:
            ids = [
                i for (i,) in conn.execute("SELECT id FROM rows WHERE namespace = ?", (namespace,))
            ]
            if not ids:
                raise NamespaceNotFound(namespace)
            kinds = dict(
                conn.execute(
                    "SELECT kind, count(*) FROM rows WHERE namespace = ? GROUP BY kind",
                    (namespace,),
                )
            )
            edges = 0
            for chunk in _chunks(ids):
                marks = _marks(chunk)
                (n,) = next(conn.execute(
                    f"SELECT count(*) FROM edges WHERE src IN ({marks}) OR dst IN ({marks})", [*chunk, *chunk]
                ))  # fmt: skip
                edges += n
                conn.execute(
                    f"DELETE FROM edges WHERE src IN ({marks}) OR dst IN ({marks})",
                    [*chunk, *chunk],
                )
                conn.execute(f"DELETE FROM row_refs WHERE id IN ({marks})", chunk)
                conn.execute(f"DELETE FROM row_vectors WHERE id IN ({marks})", chunk)
                conn.execute(f"DELETE FROM row_text WHERE rowid IN ({marks})", chunk)
            conn.execute("DELETE FROM rows WHERE namespace = ?", (namespace,))
            return ForgetReport(namespace=namespace, rows=len(ids), edges=edges, kinds=kinds)

        return await self._write(erase)

    async def stats(self) -> StoreStats:
        def get(conn: apsw.Connection) -> tuple[int, int, int]:
            (rows, namespaces) = next(
                conn.execute("SELECT count(*), count(DISTINCT namespace) FROM rows")
            )
            (edges,) = next(conn.execute("SELECT count(*) FROM edges"))
            return rows, edges, namespaces

        rows, edges, namespaces = await self._read(get)
        size = sum(
            p.stat().st_size
            for p in (self._path, Path(f"{self._path}-wal"), Path(f"{self._path}-shm"))
            if p.exists()
        )
        return StoreStats(
            location=self.location, backend="sqlite", embedding=self._embedding, rows=rows,
            edges=edges, namespaces=namespaces, size_bytes=size,
        )  # fmt: skip
