"""Episodic synthesis: phi's own notes relevant to a query, turned into one coherent block.

Raw top-K notes put a stale "pending X" next to a fresh one with equal weight. Here the
top-K candidates from `phi-episodic`, phi's goals and the query go to the small model,
which writes one block (deduplicated, recency-aware) and names the stale items, which are
flagged in the result. Exact duplicates are folded before the model sees them. The answer
is cached per query signature (model, query, goals and the candidate rows), so the same
question over the same notes costs one call, and a new or superseded note changes the
signature by itself.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Final

from pydantic import BaseModel, Field

from phi.errors import NamespaceNotFound
from phi.memory.learning._text import normal_form
from phi.memory.learning.usage import SmallModel
from phi.memory.memory import Memory
from phi.memory.model import ensure_utc, utc_now
from phi.memory.preload import format_age
from phi.memory.recall import Recalled
from phi.memory.serial import to_json

__all__ = ["EPISODIC", "SYNTHESIS_SCOPE", "Synthesis", "SynthesisAnswer", "synthesize_episodic"]

EPISODIC: Final = "phi-episodic"
SYNTHESIS_SCOPE: Final = "synthesis"
STALE_AFTER_DAYS: Final = 30

_INSTRUCTIONS: Final = """\
You turn an AI's own notes into one short, coherent memory block for answering a query.
Merge notes that say the same thing, prefer newer notes where they disagree, and say so
when a note looks stale or outdated (e.g. an old "pending" item). Keep it factual; do not
add anything the notes do not say. Return the block and the numbers of stale notes."""


class SynthesisAnswer(BaseModel):
    """The synthesized block."""

    block: str = Field(description="the coherent memory block")
    stale: list[int] = Field(default_factory=list, description="numbers of stale notes")


@dataclass(frozen=True, kw_only=True)
class Synthesis:
    """One synthesized block and where it came from."""

    query: str
    text: str
    """The block; empty when no note is relevant."""
    row_ids: tuple[str, ...]
    """The notes it was made from."""
    stale_row_ids: tuple[str, ...]
    signature: Annotated[str, Field(exclude=True)]
    """The cache key (internal: not in JSON)."""
    cached: bool
    """Whether it came from the cache (no model call)."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (`phi.memory.serial`)."""
        json_value: dict[str, Any] = to_json(self)
        return json_value


def _signature(model: str, query: str, goals: Sequence[str], hits: Sequence[Recalled]) -> str:
    payload = json.dumps(
        [model, normal_form(query), list(goals), [(h.row.row_id, h.row.status) for h in hits]]
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _prompt(query: str, goals: Sequence[str], hits: Sequence[Recalled]) -> str:
    lines = [f"QUERY: {query}", "", "GOALS:"]
    lines += [f"- {g}" for g in goals] or ["- (none)"]
    lines += ["", "NOTES (best match first):"]
    for number, hit in enumerate(hits, start=1):
        old = " (old)" if hit.age_seconds > STALE_AFTER_DAYS * 86_400 else ""
        lines.append(f"[{number}] {format_age(hit.age_seconds)}{old}: {hit.row.content}")
    return "\n".join(lines)


def _distinct(hits: Sequence[Recalled]) -> list[Recalled]:
    """Best-scoring first; an exact repeat of a note (case, punctuation) is dropped."""
    seen: set[str] = set()
    kept = []
    for hit in hits:
        key = normal_form(hit.row.content)
        if key not in seen:
            seen.add(key)
            kept.append(hit)
    return kept


async def synthesize_episodic(
    memory: Memory,
    model: SmallModel,
    query: str,
    *,
    goals: Sequence[str] = (),
    namespace: str = EPISODIC,
    limit: int = 8,
    now: datetime | None = None,
) -> Synthesis:
    """One block from the `limit` notes most relevant to `query`, with stale ones flagged."""
    moment = ensure_utc(now) if now else utc_now()
    found: list[Recalled]
    try:
        found = await memory.search(query, namespace=namespace, limit=limit, now=moment)
    except NamespaceNotFound:
        found = []
    hits = _distinct(found)
    signature = _signature(model.model_name, query, goals, hits)
    if not hits:
        return Synthesis(
            query=query, text="", row_ids=(), stale_row_ids=(), signature=signature, cached=False
        )
    row_ids = tuple(h.row.row_id for h in hits)
    cached = await memory.ledger.read_state(SYNTHESIS_SCOPE, signature)
    if cached is not None:
        value = json.loads(cached.value)
        return Synthesis(
            query=query,
            text=value["text"],
            row_ids=row_ids,
            stale_row_ids=tuple(value["stale"]),
            signature=signature,
            cached=True,
        )
    answer = await model.ask(
        "synthesize",
        _prompt(query, goals, hits),
        instructions=_INSTRUCTIONS,
        output_type=SynthesisAnswer,
    )
    if answer is None:  # the raw notes, newest first, rather than nothing
        ordered = sorted(hits, key=lambda h: h.age_seconds)
        text = "\n".join(f"- {format_age(h.age_seconds)}: {h.row.content}" for h in ordered)
        return Synthesis(
            query=query,
            text=text,
            row_ids=row_ids,
            stale_row_ids=(),
            signature=signature,
            cached=False,
        )
    stale = tuple(
        hits[n - 1].row.row_id for n in dict.fromkeys(answer.stale) if 1 <= n <= len(hits)
    )
    await memory.ledger.write_state(
        SYNTHESIS_SCOPE,
        signature,
        json.dumps({"text": answer.block, "stale": list(stale)}, ensure_ascii=False),
        at=moment,
        keep=1,
    )
    return Synthesis(
        query=query,
        text=answer.block,
        row_ids=row_ids,
        stale_row_ids=stale,
        signature=signature,
        cached=False,
    )
