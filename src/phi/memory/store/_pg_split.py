"""Many nearest-neighbour searches at once, split over two of the pool's connections.

Ingest asks one exact search per new row (its namespace's nearest rows, for the edges): at
a million rows a batch of 256 spent 373 ms in them against SQLite's 182, all of it in one
server process working through one pipeline while this process waited and the machine's
other core stood idle. Two connections, each with half the searches in its own pipeline,
let two server processes work at once. The answers are those of one pipeline, in order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Final

import anyio

from phi.memory.store._pg_schema import Conn
from phi.memory.store._pg_sql import knn_many
from phi.memory.store.base import Hit, RowFilter

__all__ = ["SPLIT_FROM", "knn_split"]

SPLIT_FROM: Final = 32
"""Fewer searches than this go through one connection: a second trip would cost more than
the work it shares (a recall's single search never splits)."""

Read = Callable[[Callable[[Conn], Awaitable[list[list[Hit]]]]], Awaitable[list[list[Hit]]]]


async def knn_split(
    read: Read, queries: Sequence[tuple[str, RowFilter]], k: int
) -> list[list[Hit]]:
    """`knn_many` of `queries`, in two halves on two connections (`read` runs a function on
    one of the pool's) when there are at least `SPLIT_FROM`. A pool of one connection runs
    the halves one after the other. If a half fails, its error is raised as it is (the
    store's own `StoreError`), not wrapped in an exception group."""
    if len(queries) < SPLIT_FROM:
        return await read(partial(knn_many, queries=queries, k=k))
    middle = len(queries) // 2
    halves = [queries[:middle], queries[middle:]]
    answers: list[list[list[Hit]]] = [[], []]

    async def search(index: int) -> None:
        answers[index] = await read(partial(knn_many, queries=halves[index], k=k))

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(search, 0)
            group.start_soon(search, 1)
    except ExceptionGroup as failed:
        raise _first(failed) from None
    return answers[0] + answers[1]


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    found = group.exceptions[0]
    return _first(found) if isinstance(found, BaseExceptionGroup) else found
