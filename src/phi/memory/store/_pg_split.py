"""Work split over two of the pool's connections, so two server processes (two cores) do
it at once: a recall's exact search beside its text step (`_pg_hybrid`), and a large batch
of nearest-neighbour searches in two halves (`knn_split`).

At a million rows a batch of 256 ingest searches spent 373 ms in one server process
working through one pipeline, while this process waited and the machine's other core
stood idle (SQLite: 182 ms). The second connection is only ever one the pool had idle
(`PostgresStore._spare`): work that finds none runs on one connection, as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeVar

import anyio

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
    """Both answers, the two run concurrently. A failure is raised as it is (the error the
    one-connection path would raise), not wrapped in an exception group; the other is
    cancelled."""
    results: dict[int, object] = {}

    async def run(index: int, fn: Callable[[], Awaitable[object]]) -> None:
        results[index] = await fn()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run, 0, first)
            group.start_soon(run, 1, second)
    except BaseExceptionGroup as failed:
        raise _first(failed) from None
    return results[0], results[1]  # type: ignore[return-value]


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    found = group.exceptions[0]
    return _first(found) if isinstance(found, BaseExceptionGroup) else found


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
