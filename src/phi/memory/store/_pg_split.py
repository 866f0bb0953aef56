"""Work split over two of the pool's connections, so two server processes (two cores) do
it at once: a recall's exact search beside its text step (`_pg_hybrid`), and a large batch
of nearest-neighbour searches in two halves (`knn_split`).

At a million rows a batch of 256 ingest searches spent 373 ms in one server process
working through one pipeline, while this process waited and the machine's other core
stood idle (SQLite: 182 ms). The second connection is only ever one the pool had idle
(`PostgresStore._spare`): work that finds none runs on one connection, as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_sql import VectorParam, knn_many
from phi.memory.store.base import Hit, RowFilter

__all__ = ["SPLIT_FROM", "at_once", "knn_split"]

A = TypeVar("A")
B = TypeVar("B")

SPLIT_FROM: Final = 128
"""Fewer searches than this run on one connection. Ingest asks 256 at a time (one per new
row); the deferred embedder asks 64 at a time (`Memory.embed_pending`) and stays on one
core, beside the writes it runs behind: split too, its searches took both cores from them
(acknowledged writes fell from 1,310 to 769-930/s at 1M rows)."""


async def at_once(
    first: Callable[[], Awaitable[A]], second: Callable[[], Awaitable[B]]
) -> tuple[A, B]:
    """Both answers, the two run concurrently: `second` as a task of its own, `first` in
    the caller's (a task group cost 0.17 ms a recall at 1M rows, paired: 6.59 -> 6.47 ms).
    A failure is raised as it is (the error the one-connection path would raise); when
    `first` fails, `second` is cancelled and waited for, so neither connection goes back
    to the pool in the middle of a statement."""
    other = asyncio.ensure_future(second())
    try:
        answer = await first()
    except BaseException:
        other.cancel()
        await asyncio.wait([other])
        if not other.cancelled():
            other.exception()  # retrieved: the caller hears of the first failure alone
        raise
    return answer, await other


async def knn_split(
    conn: Conn, beside: Conn | None, queries: Sequence[tuple[VectorParam, RowFilter]], k: int
) -> list[list[Hit]]:
    """`knn_many` of `queries`, answers in order: in two halves, one on `conn` and one on
    `beside`, when there is a second connection (the caller asks for one from `SPLIT_FROM`
    queries on)."""
    if beside is None:
        return await knn_many(conn, queries, k)
    middle = len(queries) // 2
    head, tail = await at_once(
        lambda: knn_many(conn, queries[:middle], k), lambda: knn_many(beside, queries[middle:], k)
    )
    return head + tail
