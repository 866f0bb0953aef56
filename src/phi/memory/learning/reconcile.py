"""Reconciliation: each proposed observation meets the 3 most similar active observations of
the same person, and becomes ADD, UPDATE, DELETE or NOOP.

Cheap guards first, with no model call: an exact duplicate (same words once case and
punctuation are folded) or a near duplicate (cosine at or above `near_duplicate`, stating
the same numbers) is a NOOP; a proposal with nothing similar is an ADD. Only the rest go to
the model, which sees the candidates as `[1]`, `[2]`, `[3]` so it cannot invent a row id.
UPDATE and DELETE supersede the old row (it stays, linked by a `supersedes` edge); nothing
is deleted. A model answer that cannot be used falls back to ADD: the new fact is kept next
to the old one (flagged in `meta` for review) rather than lost or allowed to erase.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic import BaseModel, Field

from phi.memory.learning._text import clean_tags, normal_form, numbers, union
from phi.memory.learning.usage import SmallModel
from phi.memory.memory import Memory
from phi.memory.model import NewRow, Row
from phi.memory.store.base import RowFilter

__all__ = [
    "DEFAULT_POLICY",
    "NEAR_DUPLICATE",
    "Action",
    "Decision",
    "Proposal",
    "ReconcileAnswer",
    "ReconcilePolicy",
    "reconcile",
]

logger = logging.getLogger("phi.memory.learning")

Action = Literal["ADD", "UPDATE", "DELETE", "NOOP"]
DecidedBy = Literal["exact-duplicate", "near-duplicate", "no-candidates", "model", "fallback"]

NEAR_DUPLICATE: Final = 0.92
"""Cosine (MiniLM) at or above which a proposal repeats an observation.

Calibrated on paraphrase and contradiction pairs (tests/memory/learning/test_calibration.py):
paraphrases score 0.76-0.97, contradictions and corrections up to 0.87 ("is 30 years old" /
"is 31 years old"; "likes rust" / "dislikes rust" 0.86; "nate" / "nathan" 0.72). A NOOP
wrongly taken loses a correction, the worst failure, so the line sits above every
contradiction with margin; paraphrases below it go to the model, which costs one call."""

_INSTRUCTIONS: Final = """\
You keep a list of facts about one person consistent. You get one NEW fact and up to three
EXISTING facts, numbered. Answer with one action:
- ADD: the new fact is about something none of the existing facts covers.
- UPDATE: the new fact refines or corrects existing fact `candidate`; give `text`, one fact
  that merges both (the newer wins where they disagree).
- DELETE: the new fact contradicts existing fact `candidate`, which is no longer true.
- NOOP: the new fact says nothing that existing facts do not already say.
Use only the candidate numbers shown."""


@dataclass(frozen=True, kw_only=True)
class ReconcilePolicy:
    """The knobs of reconciliation."""

    candidates: int = 3
    """Most similar active observations the proposal is compared with."""
    near_duplicate: float = NEAR_DUPLICATE


DEFAULT_POLICY: Final = ReconcilePolicy()


@dataclass(frozen=True, kw_only=True)
class Proposal:
    """An observation extracted from a person's own words, not yet reconciled."""

    namespace: str
    author: str | None
    content: str
    tags: tuple[str, ...] = ()
    source_uris: tuple[str, ...] = ()
    """The exchanges it came from."""


@dataclass(frozen=True, kw_only=True)
class Decision:
    """What reconciliation decided for one proposal, and what it wrote."""

    proposal: Proposal
    action: Action
    decided_by: DecidedBy
    target: Row | None = None
    """The existing row it repeats (NOOP) or supersedes (UPDATE, DELETE)."""
    content: str | None = None
    """The text written (ADD, UPDATE, DELETE)."""
    similarity: float | None = None
    """Cosine of the proposal to the most similar candidate."""
    written: Row | None = None
    """The new row; `None` for NOOP and in a dry run."""

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.proposal.namespace,
            "proposal": self.proposal.content,
            "action": self.action,
            "decided_by": self.decided_by,
            "target": self.target.row_id if self.target else None,
            "target_content": self.target.content if self.target else None,
            "content": self.content,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "written": self.written.row_id if self.written else None,
            "source_uris": list(self.proposal.source_uris),
        }


class ReconcileAnswer(BaseModel):
    """The model's verdict on one new fact."""

    action: Action
    candidate: int | None = Field(
        default=None, description="number of the existing fact, for UPDATE, DELETE or NOOP"
    )
    text: str | None = Field(default=None, description="the merged fact, for UPDATE")


def _checker(count: int) -> Callable[[ReconcileAnswer], str | None]:
    def check(answer: ReconcileAnswer) -> str | None:
        if answer.action in ("UPDATE", "DELETE") and answer.candidate is None:
            return f"{answer.action} needs `candidate`, one of 1-{count}"
        if answer.candidate is not None and not 1 <= answer.candidate <= count:
            return f"there is no existing fact {answer.candidate}; use 1-{count}"
        return None

    return check


async def _candidates(memory: Memory, proposal: Proposal, limit: int) -> list[tuple[Row, float]]:
    (vector,) = await memory.embedder.embed([proposal.content])
    hits = await memory.rows.vector_search(
        vector,
        RowFilter(namespaces=(proposal.namespace,), kinds=("observation",)),
        limit=limit,
    )
    rows = {r.row_id: r for r in await memory.rows.get_rows([h.row_id for h in hits])}
    return [(rows[h.row_id], h.score) for h in hits if h.row_id in rows]


def _guard(
    proposal: Proposal, found: list[tuple[Row, float]], policy: ReconcilePolicy
) -> Decision | None:
    """The decision that needs no model, if there is one."""
    if not found:
        return Decision(
            proposal=proposal, action="ADD", decided_by="no-candidates", content=proposal.content
        )
    wanted = normal_form(proposal.content)
    for row, score in found:
        if normal_form(row.content) == wanted:
            return Decision(
                proposal=proposal,
                action="NOOP",
                decided_by="exact-duplicate",
                target=row,
                similarity=score,
            )
    row, score = found[0]
    if score >= policy.near_duplicate and numbers(row.content) == numbers(proposal.content):
        return Decision(
            proposal=proposal,
            action="NOOP",
            decided_by="near-duplicate",
            target=row,
            similarity=score,
        )
    return None


def _prompt(proposal: Proposal, found: list[tuple[Row, float]]) -> str:
    lines = [f"NEW: {proposal.content}", "", "EXISTING:"]
    lines += [
        f"[{i}] {row.content} (noted {row.created_at:%Y-%m-%d})"
        for i, (row, _) in enumerate(found, start=1)
    ]
    return "\n".join(lines)


async def decide(
    memory: Memory, model: SmallModel, proposal: Proposal, *, policy: ReconcilePolicy
) -> Decision:
    """ADD, UPDATE, DELETE or NOOP for `proposal`, without writing anything."""
    found = await _candidates(memory, proposal, policy.candidates)
    guarded = _guard(proposal, found, policy)
    if guarded is not None:
        return guarded
    best = found[0][1]
    answer = await model.ask(
        "reconcile",
        _prompt(proposal, found),
        instructions=_INSTRUCTIONS,
        output_type=ReconcileAnswer,
        check=_checker(len(found)),
    )
    if answer is None:
        logger.warning("reconcile fell back to ADD for %r", proposal.content)
        return Decision(
            proposal=proposal,
            action="ADD",
            decided_by="fallback",
            content=proposal.content,
            similarity=best,
        )
    target = found[answer.candidate - 1][0] if answer.candidate is not None else None
    content = None
    if answer.action == "UPDATE":
        content = (answer.text or "").strip() or proposal.content
    elif answer.action in ("ADD", "DELETE"):
        content = proposal.content
    return Decision(
        proposal=proposal,
        action=answer.action,
        decided_by="model",
        target=target,
        content=content,
        similarity=best,
    )


async def apply(memory: Memory, decision: Decision) -> Decision:
    """Write what `decision` says: a new row, superseding its target for UPDATE and DELETE."""
    if decision.action == "NOOP" or decision.content is None:
        return decision
    proposal, target = decision.proposal, decision.target
    sources, tags = proposal.source_uris, clean_tags(proposal.tags)
    supersedes = None
    if decision.action in ("UPDATE", "DELETE"):
        assert target is not None, "UPDATE and DELETE always name their target"
        supersedes = target.row_id
        if decision.action == "UPDATE":
            sources = union(target.source_uris, proposal.source_uris)
            tags = clean_tags(proposal.tags, extra=target.tags)
    written = await memory.remember(
        NewRow(
            content=decision.content,
            namespace=proposal.namespace,
            kind="observation",
            tags=tags,
            source_uris=sources,
            author=proposal.author,
            supersedes=supersedes,
            meta={"learned_by": "extract", "decided_by": decision.decided_by},
        )
    )
    return Decision(
        proposal=proposal,
        action=decision.action,
        decided_by=decision.decided_by,
        target=target,
        content=decision.content,
        similarity=decision.similarity,
        written=written,
    )


async def reconcile(
    memory: Memory,
    model: SmallModel,
    proposal: Proposal,
    *,
    policy: ReconcilePolicy = DEFAULT_POLICY,
    dry_run: bool = False,
) -> Decision:
    """Decide what `proposal` means for the person's observations and, unless `dry_run`,
    write it."""
    decision = await decide(memory, model, proposal, policy=policy)
    return decision if dry_run else await apply(memory, decision)
