"""Hybrid recall: dense and BM25 rankings fused, then graph expansion and recency.

The pieces that decide a ranking are pure functions (`query_terms`, `fuse_rrf`,
`expand_scores`, `recency_factor`), tested without a database. `recall` wires them to a
`Store`; every surface (the agent's `recall` tool, preload, MCP, the web API, the LoCoMo
benchmark) goes through it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from phi.memory._stopwords import STOPWORDS
from phi.memory.embed import Embedder
from phi.memory.model import EdgeType, Row
from phi.memory.store.base import Hit, RowFilter, Store, row_matches

__all__ = [
    "DEFAULT_RECIPE",
    "Recalled",
    "RecallRecipe",
    "expand_scores",
    "fuse_rrf",
    "query_terms",
    "recall",
    "recency_factor",
]

_WORD: Final = re.compile(r"[^\W_]+(?:'[^\W_]+)?")

MatchedBy = Literal["dense", "text", "both", "graph"]


@dataclass(frozen=True, kw_only=True)
class RecallRecipe:
    """The knobs of hybrid recall. Variants are copies (`dataclasses.replace`), never edits."""

    candidates: int = 100
    """How many rows each retriever proposes before fusion."""
    rrf_k: float = 60.0
    dense_weight: float = 1.0
    text_weight: float = 1.0
    expand_types: tuple[EdgeType, ...] = ("temporal", "reference", "semantic")
    """Edge types walked from the best candidates; empty turns expansion off."""
    expand_from: int = 20
    """How many of the best fused rows lend score to their neighbours."""
    expand_weight: float = 0.3
    """Share of a row's score its neighbour receives (times the edge weight)."""
    recency_weight: float = 0.1
    """How much a fresh row is lifted over an old one of equal relevance."""
    recency_half_life_days: float = 30.0


DEFAULT_RECIPE: Final = RecallRecipe()


@dataclass(frozen=True, kw_only=True)
class Recalled:
    """A recalled row with why and how strongly it was found."""

    row: Row
    score: float
    matched_by: MatchedBy
    age_seconds: float

    def to_json(self) -> dict[str, object]:
        return {
            **self.row.to_json(),
            "score": round(self.score, 6),
            "matched_by": self.matched_by,
            "age_seconds": round(self.age_seconds, 3),
        }


def query_terms(text: str) -> list[str]:
    """Lower-cased words of `text` without stopwords, in order, each once."""
    words = [w.lower() for w in _WORD.findall(text)]
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS and len(w) > 1))


def fuse_rrf(
    rankings: Sequence[tuple[Sequence[Hit], float]], *, k: float
) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: sum of `weight / (k + rank)` over rankings."""
    fused: dict[str, float] = {}
    for hits, weight in rankings:
        for rank, hit in enumerate(hits, start=1):
            fused[hit.row_id] = fused.get(hit.row_id, 0.0) + weight / (k + rank)
    return fused


def expand_scores(
    scores: Mapping[str, float],
    neighbours: Mapping[str, Sequence[tuple[str, float]]],
    *,
    weight: float,
) -> dict[str, float]:
    """Each row in `neighbours` lends `weight * edge_weight * score` to each neighbour."""
    out = dict(scores)
    for row_id, linked in neighbours.items():
        for other, edge_weight in linked:
            out[other] = out.get(other, 0.0) + weight * edge_weight * scores[row_id]
    return out


def recency_factor(age_seconds: float, *, weight: float, half_life_days: float) -> float:
    """`1 + weight` for a row from now, falling towards 1 with age (exponential half-life)."""
    if weight == 0.0:
        return 1.0
    half_life = half_life_days * 86_400.0
    return 1.0 + weight * math.pow(0.5, age_seconds / half_life)


async def recall(
    store: Store,
    embedder: Embedder,
    query: str,
    where: RowFilter,
    *,
    limit: int,
    now: datetime,
    recipe: RecallRecipe = DEFAULT_RECIPE,
) -> list[Recalled]:
    """The best `limit` rows within `where` for `query`, best first."""
    vector = (await embedder.embed([query]))[0]
    dense = await store.vector_search(vector, where, limit=recipe.candidates)
    text = await store.text_search(query_terms(query), where, limit=recipe.candidates)
    fused = fuse_rrf([(dense, recipe.dense_weight), (text, recipe.text_weight)], k=recipe.rrf_k)
    scores = await _expand(store, fused, where, recipe)
    rows = {r.row_id: r for r in await store.get_rows(list(scores))}
    ranked = []
    for row_id, score in scores.items():
        row = rows.get(row_id)
        if row is None or not row_matches(row, where):
            continue  # an expanded neighbour outside the caller's scope never leaks in
        age = row.age_seconds(now)
        factor = recency_factor(
            age, weight=recipe.recency_weight, half_life_days=recipe.recency_half_life_days
        )
        ranked.append((score * factor, row, age))
    ranked.sort(key=lambda item: (-item[0], item[1].row_id))
    dense_ids, text_ids = {h.row_id for h in dense}, {h.row_id for h in text}
    return [
        Recalled(row=row, score=score, matched_by=_matched_by(row.row_id, dense_ids, text_ids), age_seconds=age)
        for score, row, age in ranked[:limit]
    ]


def _matched_by(row_id: str, dense: set[str], text: set[str]) -> MatchedBy:
    if row_id in dense and row_id in text:
        return "both"
    if row_id in dense:
        return "dense"
    return "text" if row_id in text else "graph"


async def _expand(
    store: Store, fused: dict[str, float], where: RowFilter, recipe: RecallRecipe
) -> dict[str, float]:
    if not recipe.expand_types or recipe.expand_weight == 0.0 or not fused:
        return fused
    seeds = sorted(fused, key=lambda i: -fused[i])[: recipe.expand_from]
    neighbours: dict[str, list[tuple[str, float]]] = {}
    for edge in await store.edges(seeds, types=recipe.expand_types):
        for a, b in ((edge.src, edge.dst), (edge.dst, edge.src)):
            if a in seeds:
                neighbours.setdefault(a, []).append((b, edge.weight))
    return expand_scores(fused, neighbours, weight=recipe.expand_weight)
