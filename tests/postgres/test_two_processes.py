"""Two processes writing one PostgreSQL store at once lose nothing, and the same text
written by both at the same moment becomes one row."""

from __future__ import annotations

import sys
import textwrap

import anyio
import anyio.abc
import anyio.streams.text
import pytest

from phi.memory.store import PostgresStore, RowFilter
from tests.memory.conformance import CONFORMANCE_SPEC

pytestmark = pytest.mark.anyio

WRITER = textwrap.dedent(
    """
    import sys, anyio
    from phi.memory.model import Edge
    from phi.memory.store import PostgresStore
    from tests.memory.conformance import CONFORMANCE_SPEC, make_row, vec, w

    async def main():
        url, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
        store = PostgresStore(url)
        await store.connect()
        await store.bind_embedding(CONFORMANCE_SPEC)
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(rounds):
            own = make_row(f"{name} note {i}", at=i)
            shared = make_row(f"shared note {i}", at=i)
            await store.write(
                [w(own, vec(1, i, 0, 1)), w(shared, vec(1, i, 1, 0))],
                [Edge(src=own.row_id, dst=shared.row_id, edge_type="temporal")],
            )
        await store.close()
        print("done", flush=True)

    anyio.run(main)
    """
)


async def _line(stream: anyio.streams.text.TextReceiveStream) -> str:
    text = ""
    with anyio.fail_after(60):
        while "\n" not in text:
            text += await stream.receive()
    return text.strip()


async def test_two_writers_lose_nothing_and_share_identical_rows(pg_url: str) -> None:
    rounds = 40
    # A fresh store made by one process first: the writers then only open it.
    store = PostgresStore(pg_url)
    await store.connect()
    await store.bind_embedding(CONFORMANCE_SPEC)
    writers: list[anyio.abc.Process] = []
    try:
        for name in ("left", "right"):
            writers.append(
                await anyio.open_process([sys.executable, "-c", WRITER, pg_url, name, str(rounds)])
            )
        outs = []
        for proc in writers:
            assert proc.stdout is not None
            outs.append(anyio.streams.text.TextReceiveStream(proc.stdout))
        assert [await _line(out) for out in outs] == ["ready", "ready"]
        for proc in writers:  # both start at the same moment
            assert proc.stdin is not None
            await proc.stdin.send(b"go\n")
        assert [await _line(out) for out in outs] == ["done", "done"]
        with anyio.fail_after(30):
            codes = [await proc.wait() for proc in writers]
        assert codes == [0, 0]
        everything = RowFilter(statuses=None)
        assert await store.count(everything) == 3 * rounds
        contents = [r.content async for r in store.scan(everything)]
        assert sorted(contents) == sorted(
            [f"{name} note {i}" for name in ("left", "right") for i in range(rounds)]
            + [f"shared note {i}" for i in range(rounds)]
        )
        # Each shared row got both writers' edges, redirected to the one stored row.
        (shared,) = [
            r
            for r in await store.latest(everything, limit=3 * rounds)
            if r.content == "shared note 0"
        ]
        assert len(await store.edges([shared.row_id])) == 2
    finally:
        for proc in writers:
            if proc.returncode is None:
                proc.kill()
            await proc.aclose()
        await store.close()
