"""What each retriever's candidate count costs a search, on a store `bench/scale.py` kept.

    uv run --frozen python bench/candidates.py STORE [--candidates 100,200] [--queries 400]

`STORE` is a kept scale store: a SQLite file (`/tmp/phi-scale/scale-1000000.db`) or a
PostgreSQL URL with its schema (`postgresql://…/postgres?options=-c%20search_path%3D
phi_scale_1000000`), as `bench/scale.py --keep` leaves them. Namespace-scoped top-10
`Memory.search` with a cached query vector, one recipe per candidate count (`RecallRecipe.
candidates`: how many rows the dense and the text retriever each propose), interleaved query
by query with the order rotating, so load on a shared machine falls on every variant alike.
Prints p50/p95 of each and the median of the per-query difference from the first.

The queries are the scale bench's (six Zipf words, their MiniLM vectors), over the store's
namespaces; the store is only read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from phi.memory import Memory, MiniLMEmbedder
from phi.memory.recall import DEFAULT_RECIPE, RecallRecipe
from scale import CachedEmbedder, Generator, quantiles


async def run(store: str, counts: list[int], queries: int) -> None:
    gen = Generator()
    texts = [" ".join(t.split()[:6]) for t in gen.texts(queries)]
    vectors = dict(zip(texts, await MiniLMEmbedder().embed(texts), strict=True))
    recipes = {n: replace(DEFAULT_RECIPE, candidates=n) for n in counts}
    times: dict[int, list[float]] = {n: [] for n in counts}
    async with Memory.open(store, embedder=CachedEmbedder(vectors)) as memory:
        names = [n.namespace for n in await memory.namespaces(prefix="bench-")]
        scopes = [names[int(p) % len(names)] for p in gen.rng.integers(0, 1 << 30, queries)]
        for text, scope in zip(texts[:20], scopes[:20], strict=True):  # warm the page cache
            for recipe in recipes.values():
                await memory.search(text, namespace=scope, limit=10, recipe=recipe)
        for i, (text, scope) in enumerate(zip(texts, scopes, strict=True)):
            order = counts[i % len(counts) :] + counts[: i % len(counts)]
            for n in order:
                times[n].append(await timed(memory, text, scope, recipes[n]))
    base = counts[0]
    print(f"store: {store.split('?')[0]}, {queries} scoped top-10 searches, cached vector")
    print(
        "| candidates | p50 ms | p95 ms | median per-query difference from "
        f"{base} ms |\n|---|---|---|---|"
    )
    for n in counts:
        p50, p95 = quantiles(times[n])
        diff = statistics.median(a - b for a, b in zip(times[n], times[base], strict=True))
        print(f"| {n} | {p50:.2f} | {p95:.2f} | {diff:+.2f} |")


async def timed(memory: Memory, text: str, scope: str, recipe: RecallRecipe) -> float:
    started = time.perf_counter()
    await memory.search(text, namespace=scope, limit=10, recipe=recipe)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("store", help="a kept scale store: SQLite file or PostgreSQL URL")
    parser.add_argument("--candidates", default="100,200")
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    counts = [int(n) for n in args.candidates.split(",")]
    anyio.run(run, args.store, counts, args.queries)


if __name__ == "__main__":
    main()
