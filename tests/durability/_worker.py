"""A process that writes to (and reads from) a phi store, for the durability tests.

Run as `python -m tests.durability._worker MODE PATH NAME [N]` from the repository root.
It waits for a line on standard input before it starts (so several workers start
together), prints `ack <row ids>` after each write returns (the write is acknowledged),
and ends with one JSON line. It embeds with the deterministic `TinyEmbedder`: the embedder
is not under test here, and loading MiniLM in every process would cost seconds each.

Modes:
- `writer`: write batches of 4 rows until killed.
- `mixed`: write N rows of its own and N // 2 rows every worker also writes (the same text
  at about the same moment), reading (count and search) after each write.
- `create`: open the (fresh) store, write one row of its own and one shared row.
- `deferred`: like `writer`, but rows are stored unembedded (the embedding queue).
- `embedder`: embed queued rows until killed.
- `drain`: embed every queued row, then print how many.
"""

from __future__ import annotations

import json
import sys

import anyio

from phi.memory import Memory, NewRow
from phi.memory.store import RowFilter
from tests.memory.conftest import TinyEmbedder


async def writer(memory: Memory, name: str, *, defer_embedding: bool = False) -> None:
    batch = 0
    while True:
        rows = await memory.remember_many(
            defer_embedding=defer_embedding,
            rows=[
                NewRow(
                    content=f"{name} batch {batch} row {i}: crows gather at dusk near the river",
                    namespace=f"phi-users-did:plc:{name}",
                    kind="observation",
                    author=f"did:plc:{name}",
                    thread=f"t{batch % 3}",
                )
                for i in range(4)
            ],
        )
        print("ack", *[r.row_id for r in rows], flush=True)
        batch += 1


async def mixed(memory: Memory, name: str, n: int) -> dict[str, object]:
    own: list[str] = []
    shared: dict[str, str] = {}
    reads = 0
    for i in range(n):
        row = await memory.remember(
            NewRow(content=f"{name} note {i} about ravens", namespace="shared-ns")
        )
        own.append(row.row_id)
        if i % 2 == 0:
            text = f"shared note {i}: everyone heard the ravens"
            shared[text] = (
                await memory.remember(NewRow(content=text, namespace="shared-ns"))
            ).row_id
        reads += await memory.store.count(RowFilter(statuses=None)) > 0
        reads += len(await memory.search("ravens", namespace="shared-ns", limit=5)) > 0
    return {"own": own, "shared": shared, "reads": reads}


async def create(memory: Memory, name: str) -> dict[str, object]:
    own = await memory.remember(NewRow(content=f"hello from {name}", namespace="first"))
    same = await memory.remember(NewRow(content="the same first words", namespace="first"))
    return {"own": own.row_id, "shared": same.row_id}


async def main(mode: str, path: str, name: str, n: int) -> None:
    sys.stdin.readline()  # the start signal
    async with Memory.open(path, embedder=TinyEmbedder()) as memory:
        if mode == "writer":
            await writer(memory, name)
        elif mode == "mixed":
            print(json.dumps(await mixed(memory, name, n)), flush=True)
        elif mode == "deferred":
            await writer(memory, name, defer_embedding=True)
        elif mode == "embedder":
            while True:
                await memory.embed_pending(batch=8)
                await anyio.sleep(0.005)
        elif mode == "drain":
            print(json.dumps({"embedded": await memory.embed_pending()}), flush=True)
        elif mode == "create":
            print(json.dumps(await create(memory, name)), flush=True)
        else:
            raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if sys.argv[4:] else 0)
