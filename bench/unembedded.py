"""What a search pays to say how many rows of its scope are not embedded yet.

    uv run --frozen python bench/unembedded.py [--rows 100000] [--db STORE] [--queries 400]
        [--backlog 10000]

`Memory.search` says how many rows of its scope wait for their vector (`Found.unembedded`):
the store counts them in the search's own read (`count_unembedded` of its filter).
This fills a store as `bench/scale.py` does (1000 namespaces, low-rank vectors, Zipf words,
every row embedded), then, on namespace-scoped top-10 searches with a cached query vector:

1. times the count alone in a read of its own, with the queue empty;
2. times `Memory.search` with the count and without it (the stores' count replaced by a
   constant), interleaved query by query (the order alternating), p50/p95 of each and the
   median of the per-query difference: what the count adds to a search (it runs inside
   the search's own read);
3. queues `--backlog` rows spread over every namespace (written without a vector) and
   measures again, the unscoped count too.

`--db` is `sqlite` (a temporary file) or a `postgresql://` URL (a fresh schema), both
removed afterwards. The backlog is embedded at the end (made-up vectors), timed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path

import anyio
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from phi.memory import Memory, MiniLMEmbedder
from phi.memory.embed import Vectors
from phi.memory.model import Row, content_hash, new_row_id
from phi.memory.scratch import scratch_location
from phi.memory.store import RowFilter, RowWrite
from phi.memory.store import _pg_queue as pg_queue
from phi.memory.store import _sqlite_queue as sqlite_queue
from scale import NAMESPACES, T0, CachedEmbedder, Generator, fill


@dataclass
class QueryEmbedder:
    """The queries' cached MiniLM vectors; any other text (the backlog, embedded at the
    end) gets a vector like the fill's."""

    cached: CachedEmbedder
    gen: Generator
    name: str = "all-MiniLM-L6-v2"
    dimension: int = 384

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if all(t in self.cached.vectors for t in texts):
            return await self.cached.embed(texts)
        spots = self.gen.rng.integers(0, NAMESPACES, size=len(texts))
        return np.asarray(self.gen.vectors(spots), dtype=np.float32)


def quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    p50, p95 = statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]
    return f"{p50:.3f} / {p95:.3f}"


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def counts(memory: Memory, scopes: list[RowFilter]) -> list[float]:
    return [await timed(partial(memory.store.count_unembedded, where)) for where in scopes]


async def queue_backlog(memory: Memory, gen: Generator, rows: int) -> None:
    """`rows` rows written without a vector, round-robin over the namespaces."""
    texts = gen.texts(rows)
    writes = []
    for i, text in enumerate(texts):
        moment = T0 + timedelta(days=400, seconds=i)
        row = Row(
            row_id=new_row_id(),
            namespace=f"bench-{i % NAMESPACES:04d}",
            kind="interaction",
            content=text,
            status="active",
            supersedes=None,
            trust="high",
            tags=(),
            source_uris=(f"backlog://{i}",),
            author=None,
            created_at=moment,
            updated_at=moment,
            meta={},
            content_hash=content_hash("interaction", text, ()),
        )
        writes.append(RowWrite(row=row, vector=None))
    for start in range(0, rows, 2000):
        await memory.store.write(writes[start : start + 2000], [])


@contextmanager
def count_skipped() -> Iterator[None]:
    """Both stores' count, as their recall calls it, replaced by a constant 0."""

    def none(conn: object, where: RowFilter) -> int:
        return 0

    async def none_async(conn: object, where: RowFilter) -> int:
        return 0

    real = sqlite_queue.count_unembedded, pg_queue.count_unembedded
    sqlite_queue.count_unembedded, pg_queue.count_unembedded = none, none_async  # type: ignore[assignment]
    try:
        yield
    finally:
        sqlite_queue.count_unembedded, pg_queue.count_unembedded = real


async def with_and_without(memory: Memory, texts: list[str], names: list[str]) -> None:
    """`Memory.search` with the count and without it, query by query, order alternating."""
    timings: dict[str, list[float]] = {"with": [], "without": []}
    for i, (text, name) in enumerate(zip(texts, names, strict=True)):
        for variant in ("with", "without") if i % 2 else ("without", "with"):
            with count_skipped() if variant == "without" else nullcontext():
                timings[variant].append(await timed(partial(memory.search, text, namespace=name)))
    delta = [a - b for a, b in zip(timings["with"], timings["without"], strict=True)]
    print(f"search with the count:    {quantiles(timings['with'])}")
    print(f"search without it:        {quantiles(timings['without'])}")
    print(f"difference, p50 of pairs: {statistics.median(delta):.3f}")


async def run(location: str, rows: int, queries: int, backlog: int) -> None:
    gen = Generator()
    texts = [" ".join(t.split()[:6]) for t in gen.texts(queries)]
    cached = CachedEmbedder(dict(zip(texts, await MiniLMEmbedder().embed(texts), strict=True)))
    async with Memory.open(location, embedder=QueryEmbedder(cached, gen)) as memory:
        started = time.perf_counter()
        await fill(memory, gen, 0, rows, {})
        print(f"filled {rows:,} rows in {time.perf_counter() - started:.0f} s")
        names = [f"bench-{int(p) % NAMESPACES:04d}" for p in gen.rng.integers(0, 1 << 30, queries)]
        scopes = [RowFilter(namespaces=(name,)) for name in names]
        for text, name in list(zip(texts, names, strict=True))[:30]:  # warm the caches
            await memory.search(text, namespace=name)
        print(f"\n{rows:,} rows, {queries} scoped queries; ms p50 / p95; queue empty")
        print(f"count alone (own read):   {quantiles(await counts(memory, scopes))}")
        await with_and_without(memory, texts, names)
        if not backlog:
            return
        await queue_backlog(memory, gen, backlog)
        print(f"\nwith {backlog:,} rows queued (~{backlog // NAMESPACES} per namespace):")
        print(f"count alone, scoped:      {quantiles(await counts(memory, scopes))}")
        print(f"count alone, unscoped:    {quantiles(await counts(memory, [RowFilter()] * 50))}")
        await with_and_without(memory, texts, names)
        found = await memory.search(texts[0], namespace=names[0])
        print(f"a search's unembedded:    {found.unembedded}")
        started = time.perf_counter()
        embedded = await memory.embed_pending(batch=500)
        print(f"embedded the backlog ({embedded:,}) in {time.perf_counter() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--db", default="sqlite")
    args = parser.parse_args()
    if args.db.startswith(("postgresql://", "postgres://")):

        async def on_postgres() -> None:
            async with scratch_location(args.db, f"unembedded_{args.rows}") as url:
                await run(url, args.rows, args.queries, args.backlog)

        anyio.run(on_postgres)
        return
    with tempfile.TemporaryDirectory() as scratch:
        location = str(Path(scratch) / f"unembedded-{args.rows}.db")
        anyio.run(run, location, args.rows, args.queries, args.backlog)


if __name__ == "__main__":
    main()
