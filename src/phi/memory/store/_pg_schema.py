"""Migrations of the PostgreSQL store.

Ordered functions registered by `@migration`, as in the SQLite store; each commits
together with its bookkeeping row, and an applied migration is never edited. An
upgrade holds one advisory lock from the moment it reads what is applied until its last
migration commits, so processes or hosts upgrading one store at once apply each migration
once and end at the same version; a backup holds the same lock shared, so no upgrade
changes the schema under its dump. Tables live in the connection's current schema (the first of its
`search_path`), so one database can hold several stores.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Final

import psycopg

from phi.memory.store._schema_version import SchemaVersion, pending_migrations

__all__ = [
    "BUILD_MEMORY_MAX",
    "MIGRATION_LOCK",
    "Conn",
    "apply_migrations",
    "build_memory",
    "code_version",
    "code_version_names",
    "create_vector_index",
    "create_vector_table",
    "missing_schema",
    "schema_version",
]

Conn = psycopg.AsyncConnection[tuple[Any, ...]]
Migration = Callable[[Conn], Awaitable[None]]
_MIGRATIONS: list[tuple[str, Migration]] = []

MIGRATION_LOCK: Final = 0x70686931
"""Advisory lock key ("phi1") held while migrations are applied (per database: two
stores of one database take turns, which keeps `CREATE EXTENSION vector` to one)."""
BUILD_MEMORY_MAX: Final = 4 << 30
"""The most memory an HNSW index build asks the server for (`maintenance_work_mem`, for
one transaction): a million 384-d vectors need ~2.8 GB. A server that cannot give it
fails the build with an out-of-memory error; a larger graph is finished on disk."""


async def missing_schema(conn: Conn) -> str | None:
    """The schema the connection's `search_path` names first, when it does not exist.

    PostgreSQL passes over a missing schema in the path and creates tables in the next
    one (usually `public`): a store whose schema was misspelt or dropped would silently
    land there, beside another store's tables.
    """
    cur = await conn.execute("SELECT current_setting('search_path'), current_schemas(false)")
    path, existing = await cur.fetchone() or ("", [])
    for entry in (e.strip() for e in str(path).split(",")):
        if not entry or entry == '"$user"' or entry == "$user":
            continue  # PostgreSQL's default first entry: the role's schema, if any
        name = entry[1:-1].replace('""', '"') if entry.startswith('"') else entry.lower()
        return None if name in existing else name
    return None


def migration(fn: Migration) -> Migration:
    _MIGRATIONS.append((fn.__name__, fn))
    return fn


def code_version_names() -> list[str]:
    """The names of this phi's migrations, in order."""
    return [name for name, _ in _MIGRATIONS]


def code_version() -> SchemaVersion:
    """The schema version this phi's migrations make."""
    return SchemaVersion.of(code_version_names())


async def _applied(conn: Conn) -> list[str]:
    # Qualified by the current schema: `to_regclass('phi_migrations')` would also find
    # another store's table further down the search path (`public`).
    cur = await conn.execute(
        "SELECT to_regclass(format('%I.phi_migrations', current_schema())) IS NOT NULL"
    )
    (exists,) = await cur.fetchone() or (False,)
    if not exists:
        return []
    cur = await conn.execute("SELECT name FROM phi_migrations")
    return [name for (name,) in await cur.fetchall()]


async def schema_version(conn: Conn) -> SchemaVersion:
    """The version of the store in the connection's schema (0 when it holds none)."""
    return SchemaVersion.of(await _applied(conn))


async def apply_migrations(conn: Conn, *, upgrade: bool = True) -> list[str]:
    """Apply pending migrations in order; return the names applied.

    An up-to-date store is only read. Otherwise the session takes `MIGRATION_LOCK`,
    reads again what is applied (another host may have upgraded meanwhile) and applies
    the rest, each migration in a transaction with its bookkeeping row, before letting
    go. A store from a newer phi (`SchemaTooNew`), or one behind this phi when `upgrade`
    is off (`SchemaBehind`), is refused before anything is written. `conn` must not be
    inside a transaction (the lock outlives each migration's).
    """
    known = code_version_names()
    if not pending_migrations(await _applied(conn), known, upgrade=upgrade):
        return []
    await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
    try:
        pending = set(pending_migrations(await _applied(conn), known, upgrade=upgrade))
        applied: list[str] = []
        for name, fn in _MIGRATIONS:
            if name not in pending:
                continue
            async with conn.transaction():
                await conn.execute(
                    "CREATE TABLE IF NOT EXISTS phi_migrations"
                    " (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                await fn(conn)
                await conn.execute("INSERT INTO phi_migrations (name) VALUES (%s)", (name,))
            applied.append(name)
        if applied:
            await vacuum(conn)
        return applied
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


VECTOR_IN_INDEX_MAX: Final = 1_850
"""Largest vector (bytes: pgvector's 8-byte header and 4 a dimension) kept inside the
namespace index itself (`row_vectors_scope ... INCLUDE (embedding)`), so a scoped exact
search is an index-only scan over adjacent pages. A B-tree entry stops at 2,704 bytes: the
namespace takes up to 804 (200 characters of UTF-8), the id 8, the entry's header 8-16.
384-d (1,544 bytes) fits, up to 460-d; a wider vector (1,536-d: 6,152 bytes, even as
`halfvec` 3,080) is found through a narrow `(namespace, id)` index in a heap kept in
namespace order instead (`cluster`)."""
TOAST_TUPLE_TARGET: Final = 8160
"""`row_vectors` keeps vectors up to ~2,000-d inside the table's own page (PostgreSQL's
default moves any row over 2 KB to the TOAST table, a second index probe and page per
vector): a namespace's vectors, in namespace order, are then read page after page."""


def vector_in_index(dimension: int) -> bool:
    """Whether a `dimension`-d vector fits in the namespace index (`VECTOR_IN_INDEX_MAX`)."""
    return 8 + 4 * dimension <= VECTOR_IN_INDEX_MAX


async def create_vector_table(conn: Conn, dimension: int) -> None:
    """The vectors, with their namespace (the scope index), and an HNSW index on cosine
    distance (made once the dimension is known). A table of an older layout (before
    `m005`, or as a re-embedding's swap builds it) is rebuilt in this one.

    A scope of one namespace (a person's) up to `_pg_sql.EXACT_MAX` rows is searched
    exactly through `row_vectors_scope`, its vectors adjacent (see `VECTOR_IN_INDEX_MAX`);
    the HNSW index serves wider ones, with `hnsw.iterative_scan` so a filter cannot starve
    it of results.
    """
    cur = await conn.execute("SELECT to_regclass('row_vectors') IS NOT NULL")
    (exists,) = await cur.fetchone() or (False,)
    if exists:
        await _vector_layout(conn)
    else:
        await conn.execute(_vector_table_sql("row_vectors", f"vector({int(dimension)})"))
        await _scope_index(conn, int(dimension))
    await create_vector_index(conn)


def _vector_table_sql(name: str, column_type: str) -> str:
    return (
        f"CREATE TABLE {name} ("
        " id bigint NOT NULL REFERENCES rows (id) ON DELETE CASCADE,"
        " namespace text NOT NULL,"
        f" embedding {column_type} NOT NULL,"
        " fresh boolean NOT NULL DEFAULT false,"
        " CONSTRAINT row_vectors_pkey PRIMARY KEY (id))"
        f" WITH (toast_tuple_target = {TOAST_TUPLE_TARGET})"
    )


async def _scope_index(conn: Conn, dimension: int) -> None:
    include = " INCLUDE (embedding)" if vector_in_index(dimension) else ""
    await conn.execute(
        f"CREATE INDEX IF NOT EXISTS row_vectors_scope ON row_vectors (namespace, id){include}"
    )
    await conn.execute(
        "CREATE INDEX IF NOT EXISTS row_vectors_fresh ON row_vectors (id) WHERE fresh"
    )


async def _vector_layout(conn: Conn) -> None:
    """Rebuild a `row_vectors` without its namespace and `fresh` columns: a new table
    filled in namespace order (one sorted pass; adding the columns in place would write
    every row twice and insert each new version into the HNSW graph), then its indexes."""
    cur = await conn.execute(
        "SELECT format_type(a.atttypid, a.atttypmod), (SELECT vector_dims(embedding)"
        " FROM row_vectors LIMIT 1), EXISTS (SELECT 1 FROM pg_attribute n"
        "  WHERE n.attrelid = 'row_vectors'::regclass AND n.attname = 'fresh'"
        "  AND NOT n.attisdropped)"
        " FROM pg_attribute a WHERE a.attrelid = 'row_vectors'::regclass"
        " AND a.attname = 'embedding'"
    )
    column_type, _, current = await cur.fetchone() or ("", None, True)
    if current:
        return
    await conn.execute("DROP INDEX IF EXISTS row_vectors_hnsw")
    await conn.execute("ALTER TABLE row_vectors RENAME TO row_vectors_old")
    await conn.execute("ALTER INDEX row_vectors_pkey RENAME TO row_vectors_old_pkey")
    await conn.execute(_vector_table_sql("row_vectors", str(column_type)))
    await conn.execute(
        "INSERT INTO row_vectors (id, namespace, embedding) SELECT v.id, r.namespace,"
        " v.embedding FROM row_vectors_old v JOIN rows r ON r.id = v.id"
        " ORDER BY r.namespace, v.id"
    )
    await conn.execute("DROP TABLE row_vectors_old")
    match = re.fullmatch(r"\w+\((\d+)\)", str(column_type))
    await _scope_index(conn, int(match.group(1)) if match else 0)
    await conn.execute("ANALYZE row_vectors")


async def vacuum(conn: Conn) -> None:
    """Mark the pages of the scoped tables all-visible (and refresh their statistics), so
    their covering indexes answer without visiting the table: a table rewritten by
    `CLUSTER` or a migration starts with no page marked. Outside a transaction."""
    for table in ("rows", "row_vectors", "row_terms", "edges"):
        cur = await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
        (exists,) = await cur.fetchone() or (False,)
        if exists:
            await conn.execute(f"VACUUM (ANALYZE) {table}")


async def cluster(conn: Conn) -> None:
    """Put each namespace's rows (and, where the index does not hold them, its vectors)
    on adjacent pages: `CLUSTER` rewrites the tables in the order of their namespace
    index. Rows written afterwards go where there is room (at the end), so a store that
    has grown a lot since is worth clustering again (`PostgresAdmin.cluster`). Takes an
    exclusive lock on each table while it is rewritten; rewriting `row_vectors` rebuilds
    its HNSW index too, so a bulk load clusters before building it."""
    await conn.execute("CLUSTER rows USING rows_namespace_time")
    cur = await conn.execute(
        "SELECT i.indnatts > i.indnkeyatts, to_regclass('row_vectors_hnsw') IS NOT NULL"
        " FROM pg_index i WHERE i.indexrelid = to_regclass('row_vectors_scope')"
    )
    found = await cur.fetchone()
    if found is None:
        return  # no vectors table yet
    holds_vectors, graph = found
    # Vectors inside the scope index are read from it in namespace order whatever the
    # table's order: rewriting the table (and its HNSW graph) would buy nothing then.
    if not (holds_vectors and graph):
        await _build_memory_for_graph(conn)  # the rewrite rebuilds the HNSW index, if any
        await conn.execute("CLUSTER row_vectors USING row_vectors_scope")


async def create_vector_index(conn: Conn) -> None:
    """The HNSW index of `row_vectors` (unless it exists), built in the caller's
    transaction over the vectors already there that are not `fresh` (a vector written
    with its row joins the graph later, off the write path: `_pg_write.settle`), with
    `maintenance_work_mem` raised for this transaction to what their graph needs (up to
    `BUILD_MEMORY_MAX`): a graph that outgrows it is finished on disk, which took 4x as
    long at 20k vectors."""
    await _build_memory_for_graph(conn)
    await conn.execute(
        "CREATE INDEX IF NOT EXISTS row_vectors_hnsw ON row_vectors"
        " USING hnsw (embedding vector_cosine_ops) WHERE NOT fresh"
    )


async def _build_memory_for_graph(conn: Conn) -> None:
    """Raise `maintenance_work_mem`, for the caller's transaction, to what an HNSW build
    over the vectors there needs (`build_memory`)."""
    cur = await conn.execute(
        "SELECT count(*), (SELECT vector_dims(embedding) FROM row_vectors LIMIT 1),"
        " (SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'maintenance_work_mem')"
        " FROM row_vectors"
    )
    count, dimension, current = await cur.fetchone() or (0, None, 0)
    wanted = build_memory(int(count), int(dimension or 0))
    if wanted > int(current):
        await conn.execute(
            "SELECT set_config('maintenance_work_mem', %s, true)", (f"{wanted // 1024}kB",)
        )


def build_memory(vectors: int, dimension: int) -> int:
    """Bytes of `maintenance_work_mem` an HNSW build of `vectors` vectors should have:
    pgvector 0.8 (m = 16) held 2,253 bytes per 384-d vector (its notice said a 16 MB
    graph filled after 7,447), the floats plus ~720 bytes; a quarter more for margin."""
    return min(int(vectors * (4 * dimension + 720) * 1.25), BUILD_MEMORY_MAX)


@migration
async def m001_initial(conn: Conn) -> None:
    found = await conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
    if await found.fetchone() is None:
        await conn.execute("CREATE EXTENSION vector")
    await conn.execute(
        """
        CREATE TABLE phi_meta (key text PRIMARY KEY, value text NOT NULL);

        CREATE TABLE rows (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            row_id text NOT NULL UNIQUE,
            namespace text NOT NULL,
            kind text NOT NULL,
            content text NOT NULL,
            content_hash text NOT NULL,
            status text NOT NULL CHECK (status IN ('active', 'superseded')),
            supersedes text,
            trust text NOT NULL,
            tags text[] NOT NULL,
            source_uris text[] NOT NULL,
            author text,
            thread text,
            created_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            meta jsonb NOT NULL,
            doc_len integer NOT NULL
        );
        CREATE UNIQUE INDEX rows_identity ON rows (namespace, content_hash);
        CREATE INDEX rows_scope ON rows (namespace, status, created_at);
        CREATE INDEX rows_namespace_time ON rows (namespace, created_at);
        CREATE INDEX rows_author ON rows (author, created_at) WHERE author IS NOT NULL;
        CREATE INDEX rows_thread ON rows (thread, created_at) WHERE thread IS NOT NULL;
        CREATE INDEX rows_created ON rows (created_at, id);

        CREATE TABLE edges (
            src bigint NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            dst bigint NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            type text NOT NULL,
            weight double precision NOT NULL,
            created_at timestamptz NOT NULL,
            PRIMARY KEY (src, dst, type)
        );
        CREATE INDEX edges_dst ON edges (dst);

        CREATE TABLE row_refs (
            ref text NOT NULL,
            id bigint NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            PRIMARY KEY (ref, id)
        );
        CREATE INDEX row_refs_id ON row_refs (id);

        -- BM25 from term statistics: postings with term frequencies (the tokens of the
        -- SQLite store's FTS5 'porter unicode61' tokenizer), document frequencies, and
        -- the corpus size and length. `text_stats` is locked by every write (one writer at
        -- a time, as in SQLite), so the statistics stay exact.
        CREATE TABLE row_terms (
            term text NOT NULL,
            namespace text NOT NULL,
            id bigint NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            tf integer NOT NULL,
            PRIMARY KEY (term, namespace, id)
        );
        CREATE INDEX row_terms_id ON row_terms (id);
        CREATE TABLE term_df (term text PRIMARY KEY, df bigint NOT NULL);
        CREATE TABLE text_stats (
            one boolean PRIMARY KEY DEFAULT true CHECK (one),
            n_rows bigint NOT NULL,
            total_len bigint NOT NULL
        );
        INSERT INTO text_stats (n_rows, total_len) VALUES (0, 0);
        """
    )


@migration
async def m002_learning(conn: Conn) -> None:
    """Bookkeeping of the learning passes: processed markers, versioned state, model calls."""
    await conn.execute(
        """
        CREATE TABLE learning_marks (
            pass text NOT NULL,
            id bigint NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            marked_at timestamptz NOT NULL,
            PRIMARY KEY (pass, id)
        );
        CREATE INDEX learning_marks_id ON learning_marks (id);

        CREATE TABLE learning_state (
            scope text NOT NULL,
            key text NOT NULL,
            version integer NOT NULL,
            value text NOT NULL,
            written_at timestamptz NOT NULL,
            PRIMARY KEY (scope, key, version)
        );

        CREATE TABLE model_calls (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            purpose text NOT NULL,
            model text NOT NULL,
            requests integer NOT NULL,
            input_tokens integer NOT NULL,
            output_tokens integer NOT NULL,
            outcome text NOT NULL,
            called_at timestamptz NOT NULL
        );
        CREATE INDEX model_calls_purpose ON model_calls (purpose, called_at);
        """
    )


@migration
async def m003_embed_queue(conn: Conn) -> None:
    """Rows written without a vector wait here (as in the SQLite store), with their
    namespace: a search counts the rows of its scope that wait from this small table, where
    an anti-join against `row_vectors` read every row of the scope; the embedder takes the
    oldest in key order. Rows already waiting (no vector) are queued now."""
    await conn.execute(
        """
        CREATE TABLE embed_queue (
            id bigint PRIMARY KEY REFERENCES rows (id) ON DELETE CASCADE,
            namespace text NOT NULL,
            queued_at timestamptz NOT NULL
        );
        CREATE INDEX embed_queue_namespace ON embed_queue (namespace);
        """
    )
    found = await conn.execute("SELECT to_regclass('row_vectors') IS NOT NULL")
    (vectors,) = await found.fetchone() or (False,)
    waiting = " WHERE NOT EXISTS (SELECT 1 FROM row_vectors v WHERE v.id = r.id)" if vectors else ""
    await conn.execute(
        f"INSERT INTO embed_queue (id, namespace, queued_at) SELECT r.id, r.namespace,"
        f" r.updated_at FROM rows r{waiting}"
    )


@migration
async def m004_written_by(conn: Conn) -> None:
    """Which credential wrote each row (a bearer token's label, never the secret), as in
    the SQLite store; rows written before are local writes (`NULL`)."""
    await conn.execute("ALTER TABLE rows ADD COLUMN written_by text")


@migration
async def m005_namespace_locality(conn: Conn) -> None:
    """A scoped search reads its namespace's pages, not pages all over the store (issue
    27): vectors carry their namespace, behind an index that holds them (or, for wide
    vectors, in a table rebuilt in namespace order), and the rows are rewritten in
    namespace order. At a million rows this rewrites the vectors and rebuilds their HNSW
    index: minutes, once."""
    cur = await conn.execute(
        "SELECT to_regclass('row_vectors') IS NOT NULL,"
        " EXISTS (SELECT 1 FROM phi_meta WHERE key = 'bulk_load')"
    )
    vectors, loading = await cur.fetchone() or (False, False)
    if vectors:
        await _vector_layout(conn)
        if not loading:  # an interrupted bulk load builds it when it is recovered
            await create_vector_index(conn)
    await conn.execute("CLUSTER rows USING rows_namespace_time")
