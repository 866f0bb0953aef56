"""kill -9 of a process writing to a PostgreSQL store loses no acknowledged row."""

from __future__ import annotations

import signal
import sys
import textwrap

import anyio
import anyio.streams.text
import pytest

from phi.memory.store import PostgresStore, RowFilter

pytestmark = pytest.mark.anyio

WRITER = textwrap.dedent(
    """
    import sys, anyio
    from phi.memory.store import PostgresStore
    from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w

    async def main():
        store = PostgresStore(sys.argv[1])
        await store.connect()
        await store.bind_embedding(CONFORMANCE_SPEC)
        for b in range(10_000):
            rows = [make_row(f"batch {b} row {i}") for i in range(20)]
            await store.write([w(r, vec(1, b, i, 1)) for i, r in enumerate(rows)], [])
            print(f"acked {b}", flush=True)

    anyio.run(main)
    """
)


async def test_kill_9_of_a_writer_loses_no_acknowledged_row(pg_url: str) -> None:
    proc = await anyio.open_process([sys.executable, "-c", WRITER, pg_url])
    assert proc.stdout is not None
    lines = anyio.streams.text.TextReceiveStream(proc.stdout)
    text = ""
    try:
        with anyio.fail_after(120):
            while text.count("\n") < 15:
                text += await lines.receive()
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        text += "".join([chunk async for chunk in lines])
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.aclose()
    acked = [int(line.split()[1]) for line in text.splitlines() if line.startswith("acked")]
    assert acked == list(range(len(acked))) and len(acked) >= 15
    store = PostgresStore(pg_url)
    await store.connect()
    try:
        contents = {r.content async for r in store.scan(RowFilter(statuses=None))}
        for b in acked:
            assert {f"batch {b} row {i}" for i in range(20)} <= contents
        # A batch is whole or absent: the one in flight at the kill is never half written.
        assert len(contents) % 20 == 0
        hits = await store.text_search(["batch"], RowFilter(), limit=1)
        assert len(hits) == 1
    finally:
        await store.close()
