"""Ablation of phi's recall on the LoCoMo development split: one technique at a time.

    uv run --frozen python bench/locomo_ablation.py [data/locomo/locomo-dev.json] \
        [--stores .cache/locomo] [--vectors .cache/locomo/queries.npz] [--only NAME ...] \
        [--markdown bench/locomo_ablation.md]

Each conversation is ingested once into a kept SQLite store (`--stores`), and query
embeddings are kept in a file (`--vectors`), so each variant, and each later run, costs
only its recall. Every variant is
`DEFAULT_RECIPE` with one or more knobs changed (a copy, never an edit of the default).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import anyio
import numpy as np

from phi.bench.locomo import CATEGORIES, DEV_SPLIT, KS, LocomoResult, run_locomo
from phi.memory import MiniLMEmbedder
from phi.memory.embed import Embedder, Vectors
from phi.memory.recall import DEFAULT_RECIPE, RecallRecipe


@dataclass(kw_only=True)
class CachedEmbedder:
    """Remembers every vector it made, so a question embedded once is never embedded again."""

    inner: Embedder
    cache: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            for text, vector in zip(missing, await self.inner.embed(missing), strict=True):
                self.cache[text] = vector
        return np.stack([self.cache[t] for t in texts]).astype(np.float32)

    def load(self, path: Path) -> None:
        """Take the vectors kept in `path` (by `save`), if it exists."""
        if path.exists():
            with np.load(path) as kept:
                self.cache |= dict(zip(kept["texts"].tolist(), kept["vectors"], strict=True))

    def save(self, path: Path) -> None:
        """Keep every vector made so far in `path` (plain arrays, no pickle)."""
        texts = list(self.cache)
        vectors = np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 0))
        np.savez(path, texts=np.array(texts, dtype=str), vectors=vectors)


def variants() -> dict[str, RecallRecipe]:
    """The recipes compared, by name: the default, then each technique on its own."""
    d = DEFAULT_RECIPE
    return {
        "default": d,
        "- date lift": replace(d, date_weight=0.0),
        "date lift without months of any year ('in June')": replace(d, date_every_year=False),
        "date lift 0.3": replace(d, date_weight=0.3),
        "date lift 1.0": replace(d, date_weight=1.0),
        "date lift, slack 0 days before / 14 after": replace(
            d, date_before_days=0.0, date_after_days=14.0
        ),
        "date lift, slack 1 day before / 3 after": replace(d, date_after_days=3.0),
        "- thread lift": replace(d, thread_weight=0.0),
        "thread lift 0.4": replace(d, thread_weight=0.4),
        "thread lift 1.0": replace(d, thread_weight=1.0),
        "- question discount": replace(d, question_weight=0.0),
        "question discount 0.2": replace(d, question_weight=0.2),
        "question discount 0.5": replace(d, question_weight=0.5),
        "- thread lift and question discount": replace(d, thread_weight=0.0, question_weight=0.0),
        "- speaker expansion": replace(d, speaker_weight=0.0),
        "- score floors (max-normalised)": replace(d, absolute_scores=False),
        "- reached-only smoothing": replace(d, smooth_reached_only=False),
        "old recipe (all three off)": replace(
            d, speaker_weight=0.0, absolute_scores=False, smooth_reached_only=False
        ),
        "no smoothing": replace(d, smooth_types=()),
        "smoothing capped at 1x own": replace(d, smooth_cap=1.0),
        "smoothing capped at 3x own": replace(d, smooth_cap=3.0),
        "reached: relevance >= 0.05": replace(d, smooth_min_relevance=0.05),
        "reached: relevance >= 0.2": replace(d, smooth_min_relevance=0.2),
        "speaker expansion 0.1": replace(d, speaker_weight=0.1),
        "speaker expansion 0.5": replace(d, speaker_weight=0.5),
        "floors 0.5 / 5": replace(d, dense_floor=0.5, text_floor=5.0),
        "floors 0.75 / 15": replace(d, dense_floor=0.75, text_floor=15.0),
        "+ window context 0.3": replace(d, window_weight=0.3),
        "+ window context 0.5": replace(d, window_weight=0.5),
        "+ pseudo-relevance feedback 5 / 0.5": replace(d, feedback_rows=5, feedback_weight=0.5),
        "+ pseudo-relevance feedback 3 / 0.3": replace(d, feedback_rows=3, feedback_weight=0.3),
        "+ reference edges": replace(d, smooth_types=("temporal", "reference")),
        "+ semantic edges": replace(d, smooth_types=("temporal", "semantic")),
        "candidates 100": replace(d, candidates=100),
        "candidates 200": replace(d, candidates=200),
        "candidates 300": replace(d, candidates=300),
        "dense weight 0.4": replace(d, dense_weight=0.4),
        "dense weight 0.45": replace(d, dense_weight=0.45),
        "dense weight 0.6": replace(d, dense_weight=0.6),
        "smoothing weight 0.3": replace(d, smooth_weight=0.3),
        "smoothing weight 0.7": replace(d, smooth_weight=0.7),
        "smoothing 1 hop": replace(d, smooth_hops=1),
        "smoothing 3 hops": replace(d, smooth_hops=3),
        "smoothing decay 0.3": replace(d, smooth_decay=0.3),
        "smoothing seeds 15": replace(d, smooth_seeds=15),
        "smoothing seeds 50": replace(d, smooth_seeds=50),
    }


def row_for(name: str, result: LocomoResult) -> str:
    cells = [f"{result.recall(k):.3f}" for k in KS]
    cells += [f"{result.recall(10, c):.3f}" for c in CATEGORIES]
    return f"| {name} | " + " | ".join(cells) + " |"


def header() -> str:
    names = [f"R@{k}" for k in KS] + [f"R@10 {n}" for n in CATEGORIES.values()]
    return "| recipe | " + " | ".join(names) + " |\n|---|" + "---|" * len(names)


async def main(
    data: Path, stores: Path, vectors: Path, only: Sequence[str], markdown: Path | None
) -> None:
    embedder = CachedEmbedder(inner=MiniLMEmbedder())
    embedder.load(vectors)
    chosen = {n: r for n, r in variants().items() if not only or n in only}
    lines = [header()]
    print(lines[0], flush=True)
    for name, recipe in chosen.items():
        result = await run_locomo(data, embedder=embedder, recipe=recipe, store_dir=stores)
        lines.append(row_for(name, result))
        print(lines[-1], flush=True)
        embedder.save(vectors)
    if markdown is not None:
        await anyio.Path(markdown).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, nargs="?", default=DEV_SPLIT, help="a LoCoMo file")
    parser.add_argument("--stores", type=Path, default=Path(".cache/locomo"))
    parser.add_argument("--vectors", type=Path, default=Path(".cache/locomo/queries.npz"))
    parser.add_argument("--only", nargs="*", default=())
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    anyio.run(main, args.data, args.stores, args.vectors, args.only, args.markdown)
