"""Second-stage signals of recall, as pure functions over what the store already returns.

Each one is a knob of `RecallRecipe` measured on its own (`bench/locomo_ablation.py`):
- `absolute_relevance`: a score with a stable meaning, the same yardstick for every query;
- `window_dense`: how well a row *with its neighbouring turns* matches the query;
- `speaker_boost`: rows said by a person the query names;
- `feedback_vector`: the query moved towards its best rows (pseudo-relevance feedback).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from phi.memory.store.base import Hit

__all__ = [
    "absolute_relevance",
    "feedback_vector",
    "speaker_boost",
    "speaker_of",
    "window_dense",
]

_SPEAKER: Final = re.compile(r"^\s*([^\s:][^:\n]{0,40}):\s")
_WORD: Final = re.compile(r"\w+")

Vector = npt.NDArray[np.float32]


def absolute_relevance(
    dense: Sequence[Hit],
    text: Sequence[Hit],
    *,
    dense_weight: float,
    dense_floor: float,
    text_floor: float,
) -> dict[str, float]:
    """`dense_weight * cos / max(best cos, dense_floor)
    + (1 - dense_weight) * bm25 / max(best bm25, text_floor)`, in [0, 1].

    Each retriever is measured against the query's best hit, as in max-normalised fusion,
    but never against a best hit weaker than its floor (a strong match): so a query that
    matches well ranks exactly as before, and a query that matches nothing well gets low
    scores instead of a 1.0 for its least bad row. A caller can drop hits under a threshold.
    """
    out: dict[str, float] = {}
    for hits, weight, floor in (
        (dense, dense_weight, dense_floor),
        (text, 1 - dense_weight, text_floor),
    ):
        scale = max(max((h.score for h in hits), default=0.0), floor)
        for hit in hits:
            if hit.score > 0.0:
                out[hit.row_id] = out.get(hit.row_id, 0.0) + weight * min(hit.score / scale, 1.0)
    return out


def window_dense(
    query: Vector,
    vectors: Mapping[str, Vector],
    adjacency: Mapping[str, Sequence[str]],
    row_ids: Iterable[str],
) -> dict[str, float]:
    """Cosine of `query` with the mean vector of each row and its direct neighbours.

    A turn like "yes, last Tuesday" means nothing alone; with the turns around it, it
    matches the question it answers. Rows without a vector are left out.
    """
    out: dict[str, float] = {}
    for row_id in row_ids:
        own = vectors.get(row_id)
        if own is None:
            continue
        around = [vectors[n] for n in adjacency.get(row_id, ()) if n in vectors]
        total = own + sum(around, np.zeros_like(own))
        norm = float(np.linalg.norm(total))
        out[row_id] = float(query @ total) / norm if norm > 0.0 else 0.0
    return out


def speaker_of(content: str) -> str | None:
    """The speaker of a "speaker: text" row, lower-cased, or None."""
    match = _SPEAKER.match(content)
    return match.group(1).strip().lower() if match else None


def speaker_boost(contents: Mapping[str, str], terms: Sequence[str]) -> set[str]:
    """Rows whose speaker (or one word of it: `alice` of `alice.bsky.social`) is a term of
    the query: a question about a person is most often answered by what they said."""
    wanted = set(terms)
    chosen = set()
    for row_id, content in contents.items():
        speaker = speaker_of(content)
        if speaker and (speaker in wanted or wanted & set(_WORD.findall(speaker))):
            chosen.add(row_id)
    return chosen


def feedback_vector(query: Vector, best: Sequence[Vector], *, weight: float) -> Vector:
    """Rocchio: the query plus `weight` times the mean of its best rows, renormalised."""
    if not best or weight == 0.0:
        return query
    moved = query + weight * np.mean(np.stack(best), axis=0)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0.0 else query
