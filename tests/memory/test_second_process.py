"""WAL mode: another process reads the store while phi writes to it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from phi.memory import Memory, MiniLMEmbedder

pytestmark = pytest.mark.anyio

READER = textwrap.dedent(
    """
    import sys, time, anyio
    from phi.memory.store import SQLiteStore, RowFilter

    async def main():
        store = SQLiteStore(sys.argv[1])
        await store.connect()
        print("ready", flush=True)
        seen = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            seen.append(await store.count(RowFilter(statuses=None)))
            if seen[-1] >= int(sys.argv[2]):
                break
            await anyio.sleep(0.01)
        await store.close()
        print(len(seen), len(set(seen)), seen[-1])

    anyio.run(main)
    """
)


async def test_a_second_process_reads_while_phi_writes(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    path = tmp_path / "shared.db"
    batches, per_batch = 12, 8
    async with Memory.open(path, embedder=minilm) as memory:
        await memory.remember("first row", namespace="ns")
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(path), str(1 + batches * per_batch)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert reader.stdout is not None
        ready = await anyio.to_thread.run_sync(reader.stdout.readline)
        assert ready == "ready\n"
        for b in range(batches):
            await memory.remember_many(
                [memory.new_row(f"batch {b} row {i} about topic {i * b}", namespace="ns") for i in range(per_batch)]
            )
            await anyio.sleep(0.05)
        out, err = await anyio.to_thread.run_sync(lambda: reader.communicate(timeout=90))
    assert reader.returncode == 0, err
    reads, distinct, last = map(int, out.split())
    assert last == 1 + batches * per_batch
    assert distinct >= 2, "the reader should have seen the store grow while it was written"
    assert reads >= distinct
