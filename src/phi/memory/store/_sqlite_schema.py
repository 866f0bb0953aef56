"""Connection setup and migrations of the SQLite store.

Every connection is made by `open_connection` (the busy timeout comes first: any later
step may meet another process's lock) and then passes through `prepare_connection`.
Migrations are ordered functions registered by `@migration`; `apply_migrations` runs the
identity check and every pending migration under one exclusive transaction, so two
processes creating a fresh store at once take turns instead of racing. An applied
migration is never edited: a change of schema is a new migration.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

import apsw
import sqlite_vec

from phi.errors import StoreError
from phi.memory.store._schema_version import SchemaVersion, pending_migrations
from phi.memory.store._sqlite_text import index_terms

__all__ = [
    "APPLICATION_ID",
    "applied_migrations",
    "apply_migrations",
    "check_identity",
    "code_version",
    "code_version_names",
    "create_vector_table",
    "open_connection",
    "prepare_connection",
    "schema_version",
]

APPLICATION_ID: Final = 0x70686931
"""`PRAGMA application_id` of a phi store ("phi1"), so a foreign SQLite file is recognised."""

BUSY_TIMEOUT_MS: Final = 10_000
MMAP_BYTES: Final = 1 << 36
"""Map up to 64 GiB (address space, not memory): every reader thread's connection then
shares the operating system's pages instead of warming a private 2 MB cache of its own."""

Migration = Callable[[apsw.Connection], None]
_MIGRATIONS: list[tuple[str, Migration]] = []


def migration(fn: Migration) -> Migration:
    _MIGRATIONS.append((fn.__name__, fn))
    return fn


def open_connection(
    path: Path, *, flags: int | None = None, busy_timeout_ms: int = BUSY_TIMEOUT_MS
) -> apsw.Connection:
    """A connection with its busy timeout set before it does anything else: every later
    step (even reading the schema) may meet another process's lock."""
    conn = apsw.Connection(str(path)) if flags is None else apsw.Connection(str(path), flags=flags)
    conn.set_busy_timeout(busy_timeout_ms)
    return conn


def check_identity(conn: apsw.Connection, path: Path) -> None:
    """Refuse a database that is neither empty nor a phi store.

    One statement, so one snapshot: read in two, another process could commit a fresh
    store's schema between them, and a phi store looked like a stranger's (no id, tables).
    """
    (app_id, tables) = next(
        conn.execute(
            "SELECT application_id, (SELECT count(*) FROM sqlite_schema) FROM pragma_application_id"
        )
    )
    if app_id != APPLICATION_ID and (app_id != 0 or tables > 0):
        raise StoreError(
            f"{str(path)!r} is a SQLite database of another program, not a phi memory "
            "store; choose another path"
        )


def prepare_connection(conn: apsw.Connection) -> None:
    """Load sqlite-vec and set WAL and foreign keys (on a connection from `open_connection`)."""
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")


def code_version() -> SchemaVersion:
    """The schema version this phi's migrations make."""
    return SchemaVersion.of(code_version_names())


def schema_version(conn: apsw.Connection) -> SchemaVersion:
    """The version of the store on `conn` (0 for a file without phi's bookkeeping)."""
    return SchemaVersion.of(applied_migrations(conn))


def applied_migrations(conn: apsw.Connection) -> list[str]:
    """The names of the migrations the store on `conn` has applied."""
    (exists,) = next(
        conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'phi_migrations'")
    )
    if not exists:
        return []
    return [name for (name,) in conn.execute("SELECT name FROM phi_migrations")]


def apply_migrations(conn: apsw.Connection, path: Path, *, upgrade: bool = True) -> list[str]:
    """Apply pending migrations in order; return the names applied.

    Everything, the identity check and the read of what is already applied included, runs
    inside one `BEGIN EXCLUSIVE`: a second process opening the same fresh file waits for
    the first to finish and then finds nothing left to do (before, it could see a
    half-made schema and call it another program's database, or create a table twice).
    A store from a newer phi (`SchemaTooNew`), or one behind this phi when `upgrade` is
    off (`SchemaBehind`), is refused before the first write.
    """
    conn.execute("BEGIN EXCLUSIVE")
    try:
        check_identity(conn, path)
        done = applied_migrations(conn)
        pending = set(pending_migrations(done, code_version_names(), upgrade=upgrade))
        if pending:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS phi_migrations"
                " (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
        applied = []
        for name, fn in _MIGRATIONS:
            if name not in pending:
                continue
            with conn:  # a savepoint: the change and its bookkeeping row go together
                fn(conn)
                conn.execute(
                    "INSERT INTO phi_migrations (name, applied_at) VALUES (?, datetime('now'))",
                    (name,),
                )
            applied.append(name)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return applied


def code_version_names() -> list[str]:
    """The names of this phi's migrations, in order."""
    return [name for name, _ in _MIGRATIONS]


def create_vector_table(conn: apsw.Connection, dimension: int) -> None:
    """The `vec0` table, partitioned by namespace so a scoped KNN reads one partition.

    Filter columns live in the vector table too, so filtered KNN stays exact instead of
    being post-filtered. `author` is `''` for none: vec0 metadata cannot be NULL.
    vec0 allocates storage a chunk at a time per partition; its default of 1024 vectors
    (1.5 MB at 384-d) per namespace made a store of 1000 small namespaces 1.6 GB. Chunks
    of 64 cut that sixteenfold and make a scoped scan faster, not slower.
    """
    conn.execute(
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS row_vectors USING vec0(
            id INTEGER PRIMARY KEY,
            namespace TEXT PARTITION KEY,
            embedding FLOAT[{int(dimension)}] distance_metric=cosine,
            kind TEXT,
            status TEXT,
            author TEXT,
            created_at FLOAT,
            chunk_size = 64
        )"""
    )
    # vec0 finds a partition's chunks by scanning its chunk table, which has no index on
    # the partition column: at 1000 namespaces that scan cost 2 ms of every scoped KNN.
    conn.execute(
        "CREATE INDEX IF NOT EXISTS row_vectors_chunks_partition"
        " ON row_vectors_chunks (partition00)"
    )


@migration
def m001_initial(conn: apsw.Connection) -> None:
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(
        """
        CREATE TABLE phi_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

        CREATE TABLE rows (
            id INTEGER PRIMARY KEY,
            row_id TEXT NOT NULL UNIQUE,
            namespace TEXT NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'superseded')),
            supersedes TEXT,
            trust TEXT NOT NULL,
            tags TEXT NOT NULL,
            source_uris TEXT NOT NULL,
            author TEXT,
            thread TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            meta TEXT NOT NULL
        );
        CREATE UNIQUE INDEX rows_identity ON rows (namespace, content_hash);
        CREATE INDEX rows_scope ON rows (namespace, status, created_at);
        CREATE INDEX rows_author ON rows (author, created_at) WHERE author IS NOT NULL;
        CREATE INDEX rows_thread ON rows (thread, created_at) WHERE thread IS NOT NULL;
        CREATE INDEX rows_created ON rows (created_at);

        CREATE TABLE edges (
            src INTEGER NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            dst INTEGER NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            type TEXT NOT NULL,
            weight REAL NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (src, dst, type)
        ) WITHOUT ROWID;
        CREATE INDEX edges_dst ON edges (dst);

        CREATE TABLE row_refs (
            ref TEXT NOT NULL,
            id INTEGER NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            PRIMARY KEY (ref, id)
        ) WITHOUT ROWID;
        CREATE INDEX row_refs_id ON row_refs (id);

        -- nskey is one token per namespace ('n' + hash) so a BM25 query can be scoped
        -- inside the index; contentless with delete support keeps the text stored once.
        CREATE VIRTUAL TABLE row_text USING fts5(
            content, nskey, tokenize = 'porter unicode61', content = '', contentless_delete = 1
        );
        """
    )


# -- learning passes (extraction, reconciliation, blocks, synthesis, usage) -----------------


@migration
def m002_learning(conn: apsw.Connection) -> None:
    """Bookkeeping of the learning passes: an explicit processed marker per (pass, row),
    versioned state (blocks, caches), and a log of every language-model call."""
    conn.execute(
        """
        CREATE TABLE learning_marks (
            pass TEXT NOT NULL,
            id INTEGER NOT NULL REFERENCES rows (id) ON DELETE CASCADE,
            marked_at REAL NOT NULL,
            PRIMARY KEY (pass, id)
        ) WITHOUT ROWID;
        CREATE INDEX learning_marks_id ON learning_marks (id);

        CREATE TABLE learning_state (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            version INTEGER NOT NULL,
            value TEXT NOT NULL,
            written_at REAL NOT NULL,
            PRIMARY KEY (scope, key, version)
        ) WITHOUT ROWID;

        CREATE TABLE model_calls (
            id INTEGER PRIMARY KEY,
            purpose TEXT NOT NULL,
            model TEXT NOT NULL,
            requests INTEGER NOT NULL,
            input_tokens INTEGER NOT NULL,
            output_tokens INTEGER NOT NULL,
            outcome TEXT NOT NULL,
            called_at REAL NOT NULL
        );
        CREATE INDEX model_calls_purpose ON model_calls (purpose, called_at);
        """
    )


@migration
def m003_recall_indexes(conn: apsw.Connection) -> None:
    conn.execute(
        """
        -- The write path asks for the newest row of a namespace, whatever its status:
        -- without this index that sorted every row of the namespace on every write.
        CREATE INDEX rows_namespace_time ON rows (namespace, created_at);
        -- Public ids of internal ids, read from a narrow index instead of the wide rows.
        CREATE INDEX rows_public_id ON rows (id, row_id);
        """
    )


@migration
def m004_namespace_terms(conn: apsw.Connection) -> None:
    """A text index whose terms belong to one namespace each, filled from the rows.

    `row_text` shares its terms across namespaces: a scoped BM25 query walked a common
    word's posting list over the whole store (at a million rows, most of a search).
    In `row_terms` every token is stored as namespace key + stemmed token (see
    `_sqlite_text`), so a scoped query reads postings of its own namespace only, and its
    BM25 statistics (document frequency) are the namespace's own. `row_text` stays for
    unscoped queries.
    """
    conn.execute(
        "CREATE VIRTUAL TABLE row_terms USING fts5("
        " terms, tokenize = 'unicode61', content = '', contentless_delete = 1)"
    )
    stem = conn.fts5_tokenizer("porter", ["unicode61"])
    rows = conn.execute("SELECT id, namespace, content FROM rows ORDER BY id")
    batch: list[tuple[int, str]] = []
    for rid, namespace, content in rows:
        batch.append((rid, index_terms(stem, namespace, content)))
        if len(batch) >= 5000:
            conn.executemany("INSERT INTO row_terms (rowid, terms) VALUES (?, ?)", batch)
            batch.clear()
    conn.executemany("INSERT INTO row_terms (rowid, terms) VALUES (?, ?)", batch)


@migration
def m005_embed_queue(conn: apsw.Connection) -> None:
    """Rows written without a vector wait here, written in their own transaction: a
    killed process loses no queued row, and a forgotten row leaves the queue with it."""
    conn.execute(
        "CREATE TABLE embed_queue ("
        " id INTEGER PRIMARY KEY REFERENCES rows (id) ON DELETE CASCADE,"
        " queued_at REAL NOT NULL)"
    )


@migration
def m006_embed_queue_namespace(conn: apsw.Connection) -> None:
    """Each queued row's namespace, indexed: a search counts the rows of its scope that
    wait (`_sqlite_queue.count_unembedded`) from this index alone, however many rows the
    namespace holds and however long another namespace's backlog is."""
    conn.execute("ALTER TABLE embed_queue ADD COLUMN namespace TEXT NOT NULL DEFAULT ''")
    conn.execute(
        "UPDATE embed_queue SET namespace = (SELECT namespace FROM rows WHERE rows.id ="
        " embed_queue.id)"
    )
    conn.execute("CREATE INDEX embed_queue_namespace ON embed_queue (namespace)")


@migration
def m007_written_by(conn: apsw.Connection) -> None:
    """Which credential wrote each row (a bearer token's label, never the secret), so a
    team store shared through `phi mcp --http` says whose client wrote what. Rows written
    before are local writes: `NULL`."""
    conn.execute("ALTER TABLE rows ADD COLUMN written_by TEXT")
