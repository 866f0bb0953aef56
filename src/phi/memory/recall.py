"""Hybrid recall: dense and BM25 rankings fused, then graph expansion and recency.

The pieces that decide a ranking are pure functions (`query_terms`, `fuse_max_normalised`,
`smooth_scores`, `recency_factor`), tested without a database. `recall` wires them to a
`RowStore`; every surface (the agent's `recall` tool, preload, MCP, the web API, the LoCoMo
benchmark) goes through it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt
from pydantic import SerializerFunctionWrapHandler, model_serializer
from pydantic.json_schema import JsonSchemaValue

from phi.memory._dates import query_dates
from phi.memory._rerank import (
    absolute_relevance,
    discount_questions,
    feedback_vector,
    speaker_boost,
    thread_lift,
    window_dense,
)
from phi.memory._stopwords import STOPWORDS
from phi.memory.embed import Embedder
from phi.memory.model import EdgeType, Row
from phi.memory.serial import spread, spread_schema, to_json
from phi.memory.store.base import (
    Hit,
    HybridQuery,
    HybridSignals,
    RowFilter,
    RowStore,
    row_matches,
)

__all__ = [
    "DEFAULT_RECIPE",
    "Found",
    "RecallRecipe",
    "Recalled",
    "best_fused",
    "fuse_max_normalised",
    "query_terms",
    "recall",
    "recency_factor",
    "smooth_scores",
]

_WORD: Final = re.compile(r"\w+")

MatchedBy = Literal["dense", "text", "both", "graph"]


@dataclass(frozen=True, kw_only=True)
class RecallRecipe:
    """The knobs of hybrid recall. Variants are copies (`dataclasses.replace`), never edits.

    The defaults were tuned on the LoCoMo development split only (`bench/locomo_ablation.md`
    measures each one).
    """

    candidates: int = 150
    """How many rows each retriever proposes. 150 over 100: R@5 +0.012 on the development
    split, no category losing more than one question; at a million rows it costs a scoped
    search 0.19 ms p50 on an idle machine, 6.33 -> 6.56 ms (`bench/candidates.py`)."""
    dense_weight: float = 0.5
    """Share of the dense score in the fused score; BM25 gets the rest. Each retriever's
    scores are divided by its best score first, so the two are on one scale."""
    smooth_types: tuple[EdgeType, ...] = ("temporal",)
    """Edge types along which a row borrows score from its neighbours; empty turns it off."""
    smooth_weight: float = 0.5
    """`a`: how much of its best neighbour's score a row borrows."""
    smooth_decay: float = 0.5
    """`g`: how much less a neighbour two hops away lends than one hop away."""
    smooth_hops: int = 2
    """`H`: how far along the graph a row looks."""
    smooth_seeds: int = 30
    """Only the neighbourhoods of this many best fused rows are walked: a row far from
    every one of them can gain too little from smoothing to reach the top."""
    recency_weight: float = 0.1
    """How much a fresh row is lifted over an old one of equal relevance."""
    recency_half_life_days: float = 30.0
    absolute_scores: bool = True
    """Score rows by `absolute_relevance` (each retriever against its best hit or a floor,
    whichever is stronger); off, against the query's best hit alone (the old way)."""
    dense_floor: float = 0.6
    """The cosine of a strong dense match (MiniLM: a question and the turn answering it)."""
    text_floor: float = 8.0
    """The BM25 score of a strong text match (FTS5 BM25 over chat turns)."""
    smooth_reached_only: bool = True
    """Only rows the query reached (own relevance at least `smooth_min_relevance`) borrow
    from their neighbours: smoothing never lifts a row the query itself did not reach."""
    smooth_min_relevance: float = 0.1
    """Own relevance from which a row counts as reached by the query."""
    smooth_cap: float | None = None
    """If set, a row borrows at most this many times its own score from each hop."""
    window_weight: float = 0.0
    """Share of a row's dense score taken from the row with its neighbouring turns."""
    window_types: tuple[EdgeType, ...] = ("temporal",)
    """Edges that make a row's window."""
    speaker_weight: float = 0.3
    """Lift (times its own relevance) for a row said by a person the query names."""
    feedback_rows: int = 0
    """Pseudo-relevance feedback: move the query towards this many best rows (0: off)."""
    feedback_weight: float = 0.5
    """How far the query moves towards the mean of those rows."""
    date_weight: float = 0.5
    """Lift (times its own relevance) for a row written near a date the query names
    ("on 7 July, 2023", "in May 2022"; `phi.memory._dates`); 0: off."""
    thread_weight: float = 0.6
    """Lift for a row whose thread (conversation) holds a strong match: times
    `1 + thread_weight * b ** 2`, `b` the thread's best relevance, at most 1
    (`phi.memory._rerank.thread_lift`); 0: off."""
    question_weight: float = 0.3
    """Discount for a row that only asks: its score times `1 - question_weight * share`,
    `share` the part of its sentences that are questions; 0: off."""
    date_every_year: bool = True
    """Whether a month named without a year ("camping in June") counts: that month of
    any year."""
    date_before_days: float = 1.0
    """A row this many days before a named date still counts as near it (plans)."""
    date_after_days: float = 7.0
    """A row this many days after a named date still counts as near it (a row tells of an
    event some days after it happened)."""


DEFAULT_RECIPE: Final = RecallRecipe()


@dataclass(frozen=True, kw_only=True)
class Recalled:
    """A recalled row with why and how strongly it was found."""

    row: Row
    score: float
    """The same yardstick for every query (see `recall`): about 0.15 for a row that shares
    no word with the query, 0.5 or more for a strong match; under 0.2 is a weak hit."""
    matched_by: MatchedBy
    age_seconds: float

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A recalled row is the row plus why it was found, side by side (not nested).
        data = spread(handler(self), "row")
        return {**data, "score": round(self.score, 6), "age_seconds": round(self.age_seconds, 3)}

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> JsonSchemaValue:
        return spread_schema(core_schema, handler, "row")

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (`phi.memory.serial`): the row's fields, then the score."""
        json_value: dict[str, object] = to_json(self)
        return json_value


class Found(list[Recalled]):
    """What a search found: the recalled rows, best first (a list, so callers that only
    rank and read rows use it as one), and how many rows of its scope it could not see by
    meaning.

    A row written with `defer_embedding` is stored and found by its words at once, but has
    no vector until the embedder reaches it; until then dense recall misses it. Saying how
    many wait lets a caller (a person at the CLI, an agent over MCP) tell an answer that
    may be missing from one that is absent.
    """

    unembedded: int
    """Rows within the search's scope (its namespaces and filters) waiting for their
    vector: text recall finds them, dense recall does not yet. 0 when none wait."""

    def __init__(self, hits: Iterable[Recalled] = (), *, unembedded: int = 0) -> None:
        super().__init__(hits)
        self.unembedded = unembedded

    def __repr__(self) -> str:
        return f"Found({list.__repr__(self)}, unembedded={self.unembedded})"

    def to_json(self) -> dict[str, object]:
        """`{"results": [...], "unembedded": N}`, each result as `Recalled.to_json`."""
        return {"results": [hit.to_json() for hit in self], "unembedded": self.unembedded}


def query_terms(text: str) -> list[str]:
    """Lower-cased words of `text` without stopwords, in order, each once."""
    words = [w.lower() for w in _WORD.findall(text)]
    return list(dict.fromkeys(w for w in words if len(w) > 1 and w not in STOPWORDS))


def fuse_max_normalised(rankings: Sequence[tuple[Sequence[Hit], float]]) -> dict[str, float]:
    """The weighted sum of each ranking's scores divided by its best score.

    Unlike rank fusion this keeps how much better the first hit is than the tenth, which
    is what lets one strong keyword match beat ten vague semantic ones.
    """
    fused: dict[str, float] = {}
    for hits, weight in rankings:
        best = max((h.score for h in hits), default=0.0)
        if best <= 0.0:
            continue
        for hit in hits:
            fused[hit.row_id] = fused.get(hit.row_id, 0.0) + weight * max(hit.score, 0.0) / best
    return fused


def best_fused(
    dense: Sequence[Hit], text: Sequence[Hit], *, weight: float, count: int
) -> list[str]:
    """The `count` best rows by fused score: where the graph walk starts."""
    fused = fuse_max_normalised([(dense, weight), (text, 1.0 - weight)])
    return sorted(fused, key=lambda i: -fused[i])[:count]


def smooth_scores(
    scores: Mapping[str, float],
    adjacency: Mapping[str, Sequence[str]],
    *,
    weight: float,
    decay: float,
    hops: int,
    reached: Collection[str] | None = None,
    cap: float | None = None,
) -> dict[str, float]:
    """`S'(x) = S(x) + weight * sum over d in 1..hops of decay**(d-1) * B_d(x)`, where
    `B_d(x)` is the best score `d` hops away, at most `cap * S(x)` when a cap is given.

    A row next to a strong match borrows from it: the answer to a question often sits one
    turn after the words that match the question. Taking the best neighbour at each
    distance (not the sum) keeps a row between two matches from outranking both.

    Only rows in `reached` (when given: the rows a retriever proposed for the query) borrow;
    the others keep their own score, so a row the query did not reach is never lifted by
    its neighbours.
    """
    nodes = set(scores) | set(adjacency)
    out: dict[str, float] = {}
    for node in nodes:
        total = scores.get(node, 0.0)
        if reached is not None and node not in reached:
            if total > 0.0:
                out[node] = total
            continue
        frontier, seen = {node}, {node}
        for d in range(1, hops + 1):
            frontier = {n for f in frontier for n in adjacency.get(f, ()) if n not in seen}
            if not frontier:
                break
            seen |= frontier
            best = max(scores.get(n, 0.0) for n in frontier)
            if cap is not None:
                best = min(best, cap * scores.get(node, 0.0))
            total += weight * decay ** (d - 1) * best
        if total > 0.0:
            out[node] = total
    return out


def recency_factor(age_seconds: float, *, weight: float, half_life_days: float) -> float:
    """`1 + weight` for a row from now, falling towards 1 with age (exponential half-life)."""
    if weight == 0.0:
        return 1.0
    half_life = half_life_days * 86_400.0
    return 1.0 + weight * math.pow(0.5, age_seconds / half_life)


async def recall(
    store: RowStore,
    embedder: Embedder,
    query: str,
    where: RowFilter,
    *,
    limit: int,
    now: datetime,
    recipe: RecallRecipe = DEFAULT_RECIPE,
    vector: npt.NDArray[np.float32] | None = None,
) -> Found:
    """The best `limit` rows within `where` for `query`, best first, and how many rows
    within `where` dense recall could not see (`Found.unembedded`). `vector` is the
    query's embedding when the caller has it already (several scopes, one query).

    A score means the same for every query (with the default `absolute_scores`): the row's
    own relevance `dense_weight * cosine + (1 - dense_weight) * text_strength(bm25)` in
    [0, 1], lifted by `1 + speaker_weight` when the query names its speaker, by
    `1 + date_weight` when it was written near a date the query names, and by at most
    `1 + thread_weight` when its thread holds a strong match (`thread_lift`: a thread whose
    best row is weak lifts next to nothing), plus what it borrows from its neighbours (never
    more than `smooth_weight * (1 + smooth_decay)` times its own score), lowered by up to
    `question_weight` when it only asks, times the recency factor (at most
    `1 + recency_weight`). A row sharing no word with the query and of cosine 0.3 scores
    about 0.15; an exact keyword match of cosine 0.6, 0.6 or more.
    """
    if vector is None:
        vector = (await embedder.embed([query]))[0]
    terms = tuple(query_terms(query))
    signals = await store.hybrid(
        HybridQuery(
            vector=vector,
            terms=terms,
            where=where,
            candidates=recipe.candidates,
            graph_types=recipe.smooth_types if recipe.smooth_weight else (),
            hops=recipe.smooth_hops,
            seeds=partial(best_fused, weight=recipe.dense_weight, count=recipe.smooth_seeds),
        )
    )
    dense: Sequence[Hit] = signals.dense
    if recipe.feedback_rows:
        dense = await _feedback_dense(store, vector, signals, where, recipe)
    if recipe.window_weight:
        dense = await _window_dense(store, vector, dense, recipe)
    fused = _relevance(dense, signals.text, recipe)
    # The lifts and the question discount read the contents and threads the store sent
    # with the signals; rows read for them anyway are not read again for the head: at a
    # million rows each trip to the store is a sizeable share of a search.
    known: dict[str, Row] = {}
    contents, threads = signals.contents, signals.threads
    if not set(fused) <= contents.keys():  # a backend that does not send contents
        known = {r.row_id: r for r in await store.get_rows(list(fused))}
        contents = {i: r.content for i, r in known.items()}
        threads = {i: t for i, r in known.items() if (t := r.thread)}
    if recipe.speaker_weight:
        spoken = speaker_boost({i: contents[i] for i in fused if i in contents}, terms)
        fused = {
            k: v * (1.0 + recipe.speaker_weight) if k in spoken else v for k, v in fused.items()
        }
    if recipe.date_weight:
        fused = await _date_lift(store, query, fused, known, recipe)
    if recipe.thread_weight:
        fused = thread_lift(fused, threads, weight=recipe.thread_weight)
    scores = (
        smooth_scores(
            fused,
            signals.adjacency,
            weight=recipe.smooth_weight,
            decay=recipe.smooth_decay,
            hops=recipe.smooth_hops,
            reached=_reached(fused, recipe),
            cap=recipe.smooth_cap,
        )
        if signals.adjacency
        else fused
    )
    # Recency lifts a score by at most (1 + weight): rows below that reach cannot make the
    # top, so only the head of the ranking is fetched.
    size = max(limit * 3, limit + 20)
    if recipe.question_weight:
        scores = discount_questions(scores, contents, weight=recipe.question_weight, keep=size)
    head = sorted(scores, key=lambda i: -scores[i])[:size]
    missing = [i for i in head if i not in known]
    rows = {i: known[i] for i in head if i in known}
    if missing:
        rows |= {r.row_id: r for r in await store.get_rows(missing)}
    ranked = []
    for row_id in head:
        row = rows.get(row_id)
        if row is None or not row_matches(row, where):
            continue  # a neighbour outside the caller's scope never leaks in
        age = row.age_seconds(now)
        factor = recency_factor(
            age, weight=recipe.recency_weight, half_life_days=recipe.recency_half_life_days
        )
        ranked.append((scores[row_id] * factor, row, age))
    ranked.sort(key=lambda item: (-item[0], item[1].row_id))
    dense_ids, text_ids = signals.from_dense, signals.from_text
    return Found(
        (
            Recalled(
                row=row,
                score=score,
                matched_by=_matched_by(row.row_id, dense_ids, text_ids),
                age_seconds=age,
            )
            for score, row, age in ranked[:limit]
        ),
        unembedded=signals.unembedded,
    )


async def _date_lift(
    store: RowStore,
    query: str,
    fused: dict[str, float],
    known: dict[str, Row],
    recipe: RecallRecipe,
) -> dict[str, float]:
    """`fused` with rows written near a date the query names lifted; rows read for it are
    added to `known` (not read again for the head)."""
    spans = query_dates(query, every_year=recipe.date_every_year)
    if not spans:
        return fused
    missing = [i for i in fused if i not in known]
    if missing:
        known |= {r.row_id: r for r in await store.get_rows(missing)}
    before = timedelta(days=recipe.date_before_days)
    after = timedelta(days=recipe.date_after_days)
    lift = 1.0 + recipe.date_weight
    return {
        k: v * lift
        if k in known
        and any(s.near(known[k].created_at, before=before, after=after) for s in spans)
        else v
        for k, v in fused.items()
    }


def _reached(fused: Mapping[str, float], recipe: RecallRecipe) -> frozenset[str] | None:
    # Not "proposed by a retriever": in a small store the dense retriever proposes every
    # row, however unrelated.
    if not recipe.smooth_reached_only:
        return None
    floor = recipe.smooth_min_relevance
    return frozenset(k for k, v in fused.items() if v >= floor)


def _relevance(dense: Sequence[Hit], text: Sequence[Hit], recipe: RecallRecipe) -> dict[str, float]:
    if recipe.absolute_scores:
        return absolute_relevance(
            dense,
            text,
            dense_weight=recipe.dense_weight,
            dense_floor=recipe.dense_floor,
            text_floor=recipe.text_floor,
        )
    return fuse_max_normalised([(dense, recipe.dense_weight), (text, 1.0 - recipe.dense_weight)])


async def _feedback_dense(
    store: RowStore,
    vector: npt.NDArray[np.float32],
    signals: HybridSignals,
    where: RowFilter,
    recipe: RecallRecipe,
) -> list[Hit]:
    """Dense scores against the query moved towards its best rows (pseudo-relevance)."""
    first = _relevance(signals.dense, signals.text, recipe)
    best = sorted(first, key=lambda i: -first[i])[: recipe.feedback_rows]
    vectors = await store.get_vectors(best)
    moved = feedback_vector(
        vector, [vectors[i] for i in best if i in vectors], weight=recipe.feedback_weight
    )
    found = await store.vector_search(moved, where, limit=recipe.candidates)
    known = {h.row_id for h in found}
    rest = [h.row_id for h in signals.dense if h.row_id not in known]
    again = await store.vector_scores(moved, rest)
    return found + [Hit(row_id=i, score=v) for i, v in again.items()]


async def _window_dense(
    store: RowStore, vector: npt.NDArray[np.float32], dense: Sequence[Hit], recipe: RecallRecipe
) -> list[Hit]:
    """Dense scores blended with the score of each row's window of neighbouring turns."""
    ids = [h.row_id for h in dense]
    adjacency: dict[str, list[str]] = {}
    for edge in await store.edges(ids, types=recipe.window_types):
        adjacency.setdefault(edge.src, []).append(edge.dst)
        adjacency.setdefault(edge.dst, []).append(edge.src)
    vectors = await store.get_vectors(list({*ids, *(n for v in adjacency.values() for n in v)}))
    window = window_dense(vector, vectors, adjacency, ids)
    share = recipe.window_weight
    return [
        Hit(row_id=h.row_id, score=(1 - share) * h.score + share * window.get(h.row_id, h.score))
        for h in dense
    ]


def _matched_by(row_id: str, dense: frozenset[str], text: frozenset[str]) -> MatchedBy:
    if row_id in dense and row_id in text:
        return "both"
    if row_id in dense:
        return "dense"
    return "text" if row_id in text else "graph"
