"""Extraction: unprocessed interactions become proposed observations about their person.

Interactions are found by an explicit marker (`Store.unmarked("extract", ...)`), never by
a timestamp guess, and marked once their proposals are reconciled. The model sees only
the person's own turns (`by_phi` false): phi's words never reach it, so a fact phi stated
and the person did not cannot be extracted, and the model never sees existing observations
(it cannot pattern-match on bad ones; only reconciliation compares). Exchanges are numbered
and the model cites the numbers, so every observation carries the source URIs of the
exchanges it came from, and a claim that shares no word with what the person said there is
dropped as made up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel, Field

from phi.memory.learning._text import clean_tags, grounded, union
from phi.memory.learning.reconcile import (
    DEFAULT_POLICY,
    Decision,
    Proposal,
    ReconcilePolicy,
    reconcile,
)
from phi.memory.learning.usage import SmallModel
from phi.memory.memory import Memory
from phi.memory.model import USER_NAMESPACE_PREFIX, Row, Turn, utc_now
from phi.memory.store.base import RowFilter

__all__ = [
    "EXTRACT_PASS",
    "ExtractReport",
    "ExtractionAnswer",
    "ProposedObservation",
    "extract",
    "person_turns",
]

logger = logging.getLogger("phi.memory.learning")

EXTRACT_PASS: Final = "extract"
"""The marker extraction leaves on each interaction it has processed."""

_INSTRUCTIONS: Final = """\
You read what one person wrote in conversations and note durable facts about them: who they
are, what they do, like, own, plan, or how they want to be addressed. Only use their own
words shown here; do not guess. Write each fact in the third person without their name,
short ("prefers to be called nate", "is learning rust"). Give 0-3 topic tags and the
numbers of the exchanges that state it. A later statement that corrects an earlier one is
its own fact. If nothing durable is said, return no facts."""


class ProposedObservation(BaseModel):
    """One fact about the person, as the model states it."""

    text: str = Field(description="the fact, third person, short")
    tags: list[str] = Field(default_factory=list, description="0-3 topic tags")
    exchanges: list[int] = Field(description="numbers of the exchanges that state it")


class ExtractionAnswer(BaseModel):
    """Every durable fact found in the exchanges."""

    observations: list[ProposedObservation]


@dataclass(frozen=True, kw_only=True)
class ExtractReport:
    """What one extraction pass read, proposed, decided and wrote."""

    interactions: int = 0
    """Interactions read (and marked, unless a dry run)."""
    proposals: int = 0
    decisions: tuple[Decision, ...] = ()
    ungrounded: tuple[str, ...] = ()
    """Proposals dropped because they rest on no word of the person's."""
    failed: tuple[str, ...] = ()
    """Row ids of interactions left unmarked because the model gave no usable answer."""
    dry_run: bool = False

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for d in self.decisions:
            found[d.action] = found.get(d.action, 0) + 1
        return found

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "interactions": self.interactions,
            "proposals": self.proposals,
            "actions": self.counts(),
            "decisions": [d.to_json() for d in self.decisions],
            "ungrounded": list(self.ungrounded),
            "failed": list(self.failed),
        }


@dataclass(kw_only=True)
class _Tally:
    interactions: int = 0
    proposals: int = 0
    decisions: list[Decision] = field(default_factory=list)
    ungrounded: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def person_turns(row: Row) -> list[Turn]:
    """The person's own turns in an interaction (`meta["turns"]` with `by_phi` false)."""
    turns = row.meta.get("turns")
    if not isinstance(turns, list):
        return []
    return [
        Turn(speaker=str(t.get("speaker", "?")), text=t["text"])
        for t in turns
        if isinstance(t, dict) and not t.get("by_phi", False) and isinstance(t.get("text"), str)
    ]


def _sources(row: Row) -> tuple[str, ...]:
    """Where an exchange came from: its URIs, or the interaction row itself."""
    return row.source_uris or (f"phi-memory:{row.row_id}",)


def _prompt(batch: Sequence[tuple[Row, list[Turn]]]) -> str:
    lines = ["Exchanges, oldest first (only the person's own words):"]
    for number, (row, said) in enumerate(batch, start=1):
        lines.append(f"[{number}] {row.created_at:%Y-%m-%d}")
        lines += [f"  {turn.speaker}: {turn.text}" for turn in said]
    return "\n".join(lines)


def _checker(count: int) -> Callable[[ExtractionAnswer], str | None]:
    def check(answer: ExtractionAnswer) -> str | None:
        for item in answer.observations:
            wrong = [n for n in item.exchanges if not 1 <= n <= count]
            if wrong or not item.exchanges:
                return f"{item.text!r} cites exchanges {wrong or []}; cite 1-{count}"
        return None

    return check


async def _extract_batch(
    memory: Memory, model: SmallModel, batch: Sequence[tuple[Row, list[Turn]]], tally: _Tally
) -> list[Proposal] | None:
    answer = await model.ask(
        "extract",
        _prompt(batch),
        instructions=_INSTRUCTIONS,
        output_type=ExtractionAnswer,
        check=_checker(len(batch)),
    )
    if answer is None:
        return None
    proposals = []
    for item in answer.observations:
        cited = [batch[n - 1] for n in dict.fromkeys(item.exchanges)]
        text = " ".join(item.text.split())
        # Grounded in the words only: a handle like @nate.test is not the person saying so.
        if not text or not grounded(text, [t.text for _, said in cited for t in said]):
            logger.info("extract dropped an ungrounded claim: %r", text)
            tally.ungrounded.append(text)
            continue
        first = cited[0][0]
        proposals.append(
            Proposal(
                namespace=first.namespace,
                author=next((r.author for r, _ in cited if r.author), None),
                content=text,
                tags=clean_tags(item.tags),
                source_uris=union(*(_sources(r) for r, _ in cited)),
            )
        )
    return proposals


async def _extract_namespace(
    memory: Memory,
    model: SmallModel,
    namespace: str,
    *,
    limit: int,
    batch_size: int,
    policy: ReconcilePolicy,
    dry_run: bool,
    tally: _Tally,
) -> None:
    rows = await memory.ledger.unmarked(
        EXTRACT_PASS,
        RowFilter(namespaces=(namespace,), kinds=("interaction",), statuses=None),
        limit=limit,
    )
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        batch = [(row, said) for row in chunk if (said := person_turns(row))]
        proposals = await _extract_batch(memory, model, batch, tally) if batch else []
        if proposals is None:
            tally.failed += [r.row_id for r in chunk]
            break  # the rest waits for the next pass, in order
        tally.interactions += len(chunk)
        tally.proposals += len(proposals)
        for proposal in proposals:
            tally.decisions.append(
                await reconcile(memory, model, proposal, policy=policy, dry_run=dry_run)
            )
        if not dry_run:
            await memory.ledger.mark(EXTRACT_PASS, [r.row_id for r in chunk], at=utc_now())


async def extract(
    memory: Memory,
    model: SmallModel,
    *,
    namespace: str | None = None,
    limit: int = 200,
    batch_size: int = 20,
    policy: ReconcilePolicy = DEFAULT_POLICY,
    dry_run: bool = False,
) -> ExtractReport:
    """Extract and reconcile observations from unprocessed interactions, person by person.

    Args:
        memory: The memory to read and write.
        model: The small model, with its call accounting.
        namespace: One person's namespace; default every `phi-users-*` namespace.
        limit: Most interactions read per namespace in this pass.
        batch_size: Interactions per extraction call.
        policy: Reconciliation knobs.
        dry_run: Decide and report, but write no row and mark nothing.
    """
    if namespace is not None:
        names = [namespace]
    else:
        names = [info.namespace for info in await memory.namespaces(prefix=USER_NAMESPACE_PREFIX)]
    tally = _Tally()
    for name in names:
        await _extract_namespace(
            memory,
            model,
            name,
            limit=limit,
            batch_size=batch_size,
            policy=policy,
            dry_run=dry_run,
            tally=tally,
        )
    return ExtractReport(
        interactions=tally.interactions,
        proposals=tally.proposals,
        decisions=tuple(tally.decisions),
        ungrounded=tuple(tally.ungrounded),
        failed=tuple(tally.failed),
        dry_run=dry_run,
    )
