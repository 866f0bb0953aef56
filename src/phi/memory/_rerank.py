"""Second-stage signals of recall, as pure functions over what the store already returns.

Each one is a knob of `RecallRecipe` measured on its own (`bench/locomo_ablation.py`):
- `absolute_relevance`: a score with a stable meaning, the same yardstick for every query;
- `window_dense`: how well a row *with its neighbouring turns* matches the query;
- `speaker_boost`: rows said by a person the query names;
- `feedback_vector`: the query moved towards its best rows (pseudo-relevance feedback);
- `thread_lift`: rows in the conversation that holds the query's strong matches;
- `discount_questions`: rows that only ask.
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
    "discount_questions",
    "feedback_vector",
    "question_share",
    "speaker_boost",
    "speaker_of",
    "thread_lift",
    "window_dense",
]

_SPEAKER: Final = re.compile(r"^\s*([^\s:][^:\n]{0,40}):\s")
_WORD: Final = re.compile(r"\w+")
_SENTENCE_END: Final = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)")

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


def thread_lift(
    scores: Mapping[str, float], threads: Mapping[str, str], *, weight: float
) -> dict[str, float]:
    """Each row times `1 + weight * min(b, 1) ** 2`, where `b` is the best score in its
    thread (a row without a thread is a thread of its own).

    A question is most often answered in the conversation about its topic, and that
    conversation holds more than one match: of two rows that match equally, the one whose
    thread also holds a strong match is the likelier answer. Squared and measured on the
    absolute scale (`absolute_relevance`), so a thread of weak matches lifts next to
    nothing and a weak query's best row stays weak.
    """
    best: dict[str, float] = {}
    for row_id, score in scores.items():
        thread = threads.get(row_id, row_id)
        best[thread] = max(best.get(thread, 0.0), score)
    return {
        row_id: score * (1.0 + weight * min(best[threads.get(row_id, row_id)], 1.0) ** 2)
        for row_id, score in scores.items()
    }


def question_share(content: str) -> float:
    """Share of `content`'s sentences that are questions (a sentence ends at `.`, `!` or
    `?` before a space or the end; an unended last sentence counts as a statement)."""
    if "?" not in content:
        return 0.0
    text = content.strip()
    ends = list(_SENTENCE_END.finditer(text))
    asked = sum("?" in end.group() for end in ends)
    unended = not ends or ends[-1].end() < len(text)
    return asked / (len(ends) + unended)


def discount_questions(
    scores: Mapping[str, float], contents: Mapping[str, str], *, weight: float, keep: int
) -> dict[str, float]:
    """`scores` with each row times `1 - weight * question_share(content)`.

    A turn that only asks ("what games do you play?") shares the words of a question about
    the thing and holds none of the answer, which its neighbour does (smoothing, run
    before this, has already let the answer borrow from it). Only rows that can still
    reach the best `keep` are read: the discount lowers a score by at most `weight`.
    """
    if not scores or weight == 0.0:
        return dict(scores)
    ranked = sorted(scores.values(), reverse=True)
    floor = (1.0 - weight) * ranked[min(keep, len(ranked)) - 1]
    return {
        row_id: score * (1.0 - weight * question_share(contents[row_id]))
        if score >= floor and row_id in contents
        else score
        for row_id, score in scores.items()
    }
