"""A writer in another process, and the checks of a store restored from a backup taken
while that writer wrote: shared by the SQLite and PostgreSQL backup tests."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import anyio.streams.text
import apsw
import psycopg

from phi.memory import Memory
from phi.memory.store import store_location
from tests.memory.conftest import TinyEmbedder

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "ns-backup"

WRITER = textwrap.dedent(
    """
    import sys, anyio
    from phi.memory import Memory, NewRow
    from tests.memory.conftest import TinyEmbedder

    async def main():
        async with Memory.open(sys.argv[1], embedder=TinyEmbedder()) as memory:
            previous = None
            for i in range(100_000):
                row = await memory.remember(
                    NewRow(content=f"note {i} about crows and rust", namespace="ns-backup")
                )
                if previous is not None:
                    await memory.link(previous, row.row_id, edge_type="causal")
                previous = row.row_id
                print("ack", i, row.row_id, flush=True)

    anyio.run(main)
    """
)


@dataclass
class Writer:
    """The writing process and what it acknowledged so far."""

    process: anyio.abc.Process
    stream: anyio.streams.text.TextReceiveStream
    acked: list[str]
    pending: str = ""

    async def wait_for(self, count: int) -> None:
        """Read acknowledgements until at least `count` rows were acknowledged."""
        with anyio.fail_after(120):
            while len(self.acked) < count:
                self.pending += await self.stream.receive()
                *lines, self.pending = self.pending.split("\n")
                self.acked += [line.split()[2] for line in lines if line.startswith("ack ")]


async def start_writer(location: str) -> Writer:
    process = await anyio.open_process([sys.executable, "-c", WRITER, location], cwd=ROOT)
    assert process.stdout is not None
    return Writer(process, anyio.streams.text.TextReceiveStream(process.stdout), [])


async def stop_writer(writer: Writer) -> None:
    if writer.process.returncode is None:
        writer.process.kill()
    await writer.process.aclose()


async def check_restored(restored: str, source: str, *, acked_before: list[str]) -> int:
    """Compare the restored store with its source (the writer stopped): every restored row
    is a whole row of the source, every row acknowledged before the backup began is there,
    each edge joins two restored rows, and recall works. Returns the restored row count."""
    async with Memory.open(source, embedder=TinyEmbedder(), auto_upgrade=True) as memory:
        original = {row.row_id: row async for row in memory.export()}
    async with Memory.open(restored, embedder=TinyEmbedder(), auto_upgrade=True) as memory:
        rows = {row.row_id: row async for row in memory.export()}
        stats = await memory.stats()
        assert set(acked_before) <= set(rows)
        for row_id, row in rows.items():
            assert original[row_id] == row
        assert stats.rows == len(rows)
        # The writer links each row to the one before, after writing it: a snapshot holds
        # every link between rows it holds but perhaps the newest row's.
        edges, source_edges = await _edges(restored), await _edges(source)
        assert stats.edges == len(edges) > 0
        assert edges <= source_edges
        among = {e for e in source_edges if e[0] in rows and e[1] in rows}
        newest_id = max(rows.values(), key=lambda r: r.created_at).row_id
        # The writer links a row to the one before after writing it: only that link of
        # the newest row may miss from a snapshot.
        assert {e for e in among - edges if newest_id not in e[:2]} == set()
        assert (await _count(restored, "row_vectors")) == len(rows)
        newest = max(rows.values(), key=lambda r: r.created_at)
        found = await memory.search(newest.content, namespace=NAMESPACE, limit=1)
        assert [hit.row.row_id for hit in found] == [newest.row_id]
        assert found[0].matched_by == "both"  # its vector and its text were restored
        first = await memory.get(acked_before[0])
        assert first.content == "note 0 about crows and rust"
    return len(rows)


EDGES = (
    "SELECT s.row_id, d.row_id, e.type FROM edges e JOIN rows s ON s.id = e.src"
    " JOIN rows d ON d.id = e.dst"
)


async def _query(location: str, sql: str) -> list[tuple[object, ...]]:
    where = store_location(location)
    if isinstance(where, Path):
        from phi.memory.store._sqlite_schema import prepare_connection

        conn = apsw.Connection(str(where))
        prepare_connection(conn)  # sqlite-vec, for `row_vectors`
        try:
            return list(conn.execute(sql))
        finally:
            conn.close()
    async with await psycopg.AsyncConnection.connect(where, autocommit=True) as pg:
        cur = await pg.execute(sql.encode())
        return list(await cur.fetchall())


async def _edges(location: str) -> set[tuple[object, ...]]:
    return set(await _query(location, EDGES))


async def _count(location: str, table: str) -> int:
    ((n,),) = await _query(location, f"SELECT count(*) FROM {table}")
    assert isinstance(n, int)
    return n
