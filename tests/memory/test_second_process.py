"""WAL mode: another process reads the store while phi writes to it."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import anyio
import anyio.streams.text
import pytest

from phi.memory import Memory, MiniLMEmbedder, NewRow

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


async def test_a_second_process_reads_while_phi_writes(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    path = tmp_path / "shared.db"
    batches, per_batch = 12, 8
    async with Memory.open(path, embedder=minilm) as memory:
        await memory.remember(NewRow(content="first row", namespace="ns"))
        async with await anyio.open_process(
            [sys.executable, "-c", READER, str(path), str(1 + batches * per_batch)]
        ) as reader:
            assert reader.stdout is not None and reader.stderr is not None
            stdout = anyio.streams.text.TextReceiveStream(reader.stdout)
            text = ""
            with anyio.fail_after(60):
                while "\n" not in text:
                    text += await stdout.receive()
            assert text.startswith("ready\n")
            for b in range(batches):
                await memory.remember_many(
                    [
                        NewRow(content=f"batch {b} row {i} about topic {i * b}", namespace="ns")
                        for i in range(per_batch)
                    ]
                )
                await anyio.sleep(0.05)
            with anyio.fail_after(90):
                text += "".join([chunk async for chunk in stdout])
                errors = anyio.streams.text.TextReceiveStream(reader.stderr)
                err = "".join([chunk async for chunk in errors])
                await reader.wait()
    out = text.strip().splitlines()[-1]
    assert reader.returncode == 0, err
    reads, distinct, last = map(int, out.split())
    assert last == 1 + batches * per_batch
    assert distinct >= 2, "the reader should have seen the store grow while it was written"
    assert reads >= distinct
