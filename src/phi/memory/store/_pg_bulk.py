"""Loading many rows into an empty PostgreSQL store: the HNSW index built once at the end.

Each row inserted into an HNSW index searches the graph for its neighbours, on disk and
logged: 2.2 of the 2.9 ms a row took to write on 2 busy cores at 10k rows. Building the
index once over the loaded vectors, in memory, is pgvector's standard way to bulk-load
(10k rows: 1,022 rows/s with the build, against 350).
So `PostgresStore.bulk_load` drops the (still empty) index, the rows go in through the
ordinary write path, and the index is built at the end with the memory it needs, after
the rows and vectors are rewritten in namespace order (`_pg_schema.cluster`: a scoped
search then reads adjacent pages); the tables are vacuumed then (their covering indexes
answer without visiting them).

Only an empty store that no other process has open takes this path: every pool
connection of an open store holds a shared advisory lock named after its schema
(`PRESENCE`), and the loader counts the holders that are not its own. Another process
that opens the store during the load sees correct results, only slower ones (wide vector
searches scan instead of using the index), and its vector writes wait while the index is
built.

Crash safety: the index is dropped in the transaction that records the load in
`phi_meta` (`bulk_load`), and built in the one that removes that record. The loader holds
a session advisory lock (`LOADING`) on a connection of its own for as long as it loads,
so a loader that dies releases it with its connection; `recover`, run by every `connect`,
finds the record without a live loader and builds the index then.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection
from typing import Final

import psycopg

from phi.memory.store._pg_schema import Conn, cluster, create_vector_index, vacuum

__all__ = ["announce", "begin", "finish", "recover", "schema_key"]

PRESENCE: Final = 0x70686932
"""Advisory lock class ("phi2") held, shared, by each open store's pool connections."""
LOADING: Final = 0x70686933
"""Advisory lock class ("phi3") held by a bulk loader for as long as it loads."""
MARKER: Final = "bulk_load"
"""`phi_meta` key present while a bulk load has the HNSW index dropped."""
CONNECT_TIMEOUT_S: Final = 10


def schema_key(schema: str) -> int:
    """The advisory lock key of a store: its schema's name (locks are per database)."""
    return zlib.crc32(schema.encode()) & 0x7FFFFFFF


async def announce(conn: Conn, key: int) -> None:
    """Mark `conn`'s session as one of an open store's (released when it closes)."""
    await conn.execute("SELECT pg_advisory_lock_shared(%s, %s)", (PRESENCE, key))


async def _others_present(conn: Conn, key: int, own: Collection[int]) -> int:
    """Sessions holding the store's presence lock that are not the caller's."""
    cur = await conn.execute(
        "SELECT count(DISTINCT pid) FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        " AND classid = %s AND objid = %s AND objsubid = 2 AND NOT pid = ANY(%s)",
        (PRESENCE, key, list(own)),
    )
    (n,) = await cur.fetchone() or (0,)
    return int(n)


async def _try_lock_loading(conn: Conn, key: int) -> bool:
    cur = await conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOADING, key))
    (got,) = await cur.fetchone() or (False,)
    return bool(got)


async def begin(url: str, key: int, own: Collection[int]) -> Conn | None:
    """Start a bulk load if the store is empty, has its vector table and is open nowhere
    else: return the loader's connection (holding `LOADING`), else None."""
    conn = await psycopg.AsyncConnection.connect(
        url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
    )
    try:
        if not await _try_lock_loading(conn, key):
            await conn.close()  # another process loads it
            return None
        async with conn.transaction():
            # The write lock (`_pg_write.lock_writes`): no row can land while we decide.
            await conn.execute("SELECT 1 FROM text_stats FOR UPDATE")
            cur = await conn.execute(
                "SELECT NOT EXISTS (SELECT 1 FROM rows), to_regclass('row_vectors') IS NOT NULL"
            )
            empty, has_vectors = await cur.fetchone() or (False, False)
            if empty and has_vectors and await _others_present(conn, key, own) == 0:
                await conn.execute(
                    "INSERT INTO phi_meta (key, value) VALUES (%s, now()::text)"
                    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (MARKER,),
                )
                await conn.execute("DROP INDEX IF EXISTS row_vectors_hnsw")
                return conn
        await conn.close()
        return None
    except BaseException:
        await conn.close()
        raise


async def _build(conn: Conn) -> None:
    async with conn.transaction():
        # Namespace order first, while there is no HNSW graph for the rewrite to rebuild.
        await cluster(conn)
        await create_vector_index(conn)
        await conn.execute("DELETE FROM phi_meta WHERE key = %s", (MARKER,))
    await vacuum(conn)


async def finish(conn: Conn) -> None:
    """Build the index and end the load begun on `conn`; the connection is closed."""
    try:
        await _build(conn)
    finally:
        await conn.close()  # releases `LOADING`


async def recover(conn: Conn, key: int) -> bool:
    """If a bulk load was interrupted (its record is there but no loader holds
    `LOADING`), build the index now; return whether it did. `conn` is in autocommit."""
    cur = await conn.execute("SELECT 1 FROM phi_meta WHERE key = %s", (MARKER,))
    if await cur.fetchone() is None or not await _try_lock_loading(conn, key):
        return False
    try:
        cur = await conn.execute("SELECT 1 FROM phi_meta WHERE key = %s", (MARKER,))
        if await cur.fetchone() is None:  # its loader finished while we looked
            return False
        await _build(conn)
        return True
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOADING, key))
