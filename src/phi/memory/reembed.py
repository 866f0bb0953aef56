"""Moving a store to another embedding model, safely (`Memory.reembed`).

Every row's text is embedded again with the new model, a batch at a time, and each batch is
staged in the store beside the live vectors (`EmbeddingSwap.stage_vectors`). The live vectors
and the store's bound model change only at the very end, in the one transaction that also
stores the last batch (`EmbeddingSwap.swap_embedding`). So at any moment before that commit the
store is searchable with the old model, an interruption (a crash, a failing embedding
server) loses nothing, and running the move again embeds only the rows not yet staged.
Rows written while the move runs (by this process or another) are picked up before the
swap: the swap refuses while any row lacks a new vector.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from phi.errors import InvalidInput
from phi.memory.embed import Embedder
from phi.memory.store import EmbeddingSpec, Store

__all__ = ["ReembedProgress", "ReembedReport", "reembed_rows"]


@dataclass(frozen=True, kw_only=True)
class ReembedProgress:
    """How far a move has come, after each staged batch."""

    done: int
    """Rows with a new vector so far (those staged by an earlier, interrupted run too)."""
    total: int
    """Rows in the store (it can grow while the move runs)."""


@dataclass(frozen=True, kw_only=True)
class ReembedReport:
    """What a finished move did."""

    model: str
    """The store's model now."""
    dimension: int
    previous: str | None
    """The model the store had before (`None`: it had none)."""
    rows: int
    """Rows that carry a vector of the new model."""
    embedded: int
    """Rows embedded by this run (the rest were staged by an interrupted earlier run)."""
    seconds: float


async def reembed_rows(
    store: Store,
    to: Embedder,
    *,
    lock: anyio.Lock,
    on_swap: Callable[[], None],
    batch_size: int = 64,
    progress: Callable[[ReembedProgress], None] | None = None,
) -> ReembedReport:
    """Embed every row of `store` with `to` and swap the new vectors in at the end.

    The swap runs under `lock` (the caller's write lock) and `on_swap` runs right after it
    under the same lock, so no write of the caller's can slip in with the old model
    between the store moving and the caller switching its embedder.

    Raises:
        InvalidInput: `to` is the store's model already, or `batch_size` is below 1.
        EmbeddingFailed: the new embedder failed; staged batches stay for the next run.
    """
    if batch_size < 1:
        raise InvalidInput(f"batch size {batch_size} must be at least 1")
    spec = EmbeddingSpec(model=to.name, dimension=to.dimension)
    previous = await store.embedding()
    if previous == spec:
        raise InvalidInput(f"the store already uses {spec.model!r} ({spec.dimension}-d)")
    started = time.perf_counter()
    embedded = 0
    while True:
        batch = await store.unstaged(spec, limit=batch_size)
        vectors = await to.embed([row.content for row in batch])
        new = {row.row_id: vector for row, vector in zip(batch, vectors, strict=True)}
        embedded += len(batch)
        if len(batch) == batch_size:
            await store.stage_vectors(spec, new)
        else:
            # A short batch is the last one: it goes in with the swap, in one transaction.
            async with lock:
                if await store.swap_embedding(spec, new) == 0:
                    on_swap()
                    break
        if progress is not None:
            total = (await store.stats()).rows
            progress(ReembedProgress(done=total - await store.count_unstaged(spec), total=total))
    rows = (await store.stats()).rows
    return ReembedReport(
        model=spec.model,
        dimension=spec.dimension,
        previous=previous.model if previous else None,
        rows=rows,
        embedded=embedded,
        seconds=time.perf_counter() - started,
    )
