"""Review (dream/distill): the model looks over a person's recent active observations and
answers keep, supersede or promote for each.

Each observation is shown with a short key (`o1`, `o2`, ...) and every verdict names its
key: verdicts are matched by key, never by their position in the list, so a skipped or
reordered verdict cannot land on the wrong row. An observation without a verdict is kept;
a verdict for an unknown key is refused and the model asked again, and if it cannot
answer, everything is kept. Supersede writes the corrected text over the old row (or, with
no replacement, retires it); nothing is deleted. Promote keeps the observation and writes
a public note card to `phi-public` that records where it came from (the person as its
`author`, the observation in `meta["derived_from"]`, and a `causal` edge), so forgetting
the person erases the card too. Given a `publish` callable (the agent passes one that
writes the cosmik card record on phi's PDS; memory itself knows no network), the card is
published first and its AT-URI kept in `meta["published_uris"]`, which `forget` reports
for the operator to delete.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from pydantic import BaseModel, Field

from phi.memory.learning._text import clean_tags
from phi.memory.learning.usage import SmallModel
from phi.memory.memory import Memory
from phi.memory.model import USER_NAMESPACE_PREFIX, Edge, NewRow, Row, utc_now
from phi.memory.store.base import DERIVED_FROM, PUBLISHED_URIS, RowFilter

__all__ = [
    "PUBLIC",
    "CardPublisher",
    "ReviewAnswer",
    "ReviewOutcome",
    "Verdict",
    "review",
]

logger = logging.getLogger("phi.memory.learning")

PUBLIC: Final = "phi-public"
VerdictName = Literal["keep", "supersede", "promote"]

_INSTRUCTIONS: Final = """\
You review what an AI believes about one person. For each observation, by its key, answer:
- keep: still plausible and useful;
- supersede: outdated, wrong or redundant; give `replacement` (the corrected fact) or
  leave it empty to retire the observation;
- promote: knowledge worth sharing publicly that is not private about the person (a
  recommendation, a public project); give `card`, a short public note.
Give one verdict per key; keys you leave out are kept."""


class CardPublisher(Protocol):
    """Publishes a promoted card where others can read it (phi's PDS)."""

    async def __call__(self, text: str) -> str:
        """Publish a public note card holding `text`; return its AT-URI."""
        ...


class Verdict(BaseModel):
    """The model's verdict on one observation."""

    key: str = Field(description="the observation's key, e.g. 'o3'")
    verdict: VerdictName
    replacement: str | None = Field(default=None, description="corrected fact, for supersede")
    card: str | None = Field(default=None, description="public note text, for promote")


class ReviewAnswer(BaseModel):
    """Verdicts, one per observation key."""

    verdicts: list[Verdict]


@dataclass(frozen=True, kw_only=True)
class ReviewOutcome:
    """What review decided for one observation, and what it wrote."""

    row: Row
    verdict: VerdictName
    text: str | None = None
    """The replacement (supersede) or card (promote)."""
    written: Row | None = None
    """The replacement row or public card (`None` for keep, a retirement, a dry run)."""
    published: str | None = None
    """The AT-URI of the card's public record, when a promote was published."""

    def to_json(self) -> dict[str, Any]:
        return {
            "row_id": self.row.row_id,
            "namespace": self.row.namespace,
            "content": self.row.content,
            "verdict": self.verdict,
            "text": self.text,
            "written": self.written.row_id if self.written else None,
            "published": self.published,
        }


def _checker(keys: Sequence[str]) -> Callable[[ReviewAnswer], str | None]:
    def check(answer: ReviewAnswer) -> str | None:
        unknown = [v.key for v in answer.verdicts if v.key not in keys]
        if unknown:
            return f"unknown keys {unknown}; use only {', '.join(keys)}"
        cardless = [v.key for v in answer.verdicts if v.verdict == "promote" and not v.card]
        if cardless:
            return f"promote needs a `card` text: {cardless}"
        return None

    return check


async def _apply(
    memory: Memory, outcome: ReviewOutcome, publish: CardPublisher | None
) -> ReviewOutcome:
    row, text = outcome.row, outcome.text
    written: Row | None = None
    published: str | None = None
    if outcome.verdict == "supersede" and text:
        written = await memory.remember(
            NewRow(
                content=text,
                namespace=row.namespace,
                kind=row.kind,
                tags=row.tags,
                source_uris=row.source_uris,
                author=row.author,
                supersedes=row.row_id,
                meta={"learned_by": "review"},
            )
        )
    elif outcome.verdict == "supersede":
        await memory.rows.set_status([row.row_id], "superseded", at=utc_now())
    elif outcome.verdict == "promote" and text:
        # Published first: a failure leaves nothing half-done locally, and the next review
        # can promote it again.
        published = await publish(text) if publish is not None else None
        meta: dict[str, object] = {
            "learned_by": "review",
            "promoted_from": row.row_id,
            DERIVED_FROM: [row.row_id],
        }
        if published is not None:
            meta[PUBLISHED_URIS] = [published]
        written = await memory.remember(
            NewRow(
                content=text,
                namespace=PUBLIC,
                kind="note",
                tags=clean_tags(row.tags),
                source_uris=row.source_uris,
                # Provenance `Memory.forget` follows: the card goes when the person is forgotten.
                author=row.author,
                meta=meta,
            )
        )
        await memory.rows.add_edges([Edge(src=row.row_id, dst=written.row_id, edge_type="causal")])
    return ReviewOutcome(
        row=row, verdict=outcome.verdict, text=text, written=written, published=published
    )


async def _review_namespace(
    memory: Memory,
    model: SmallModel,
    namespace: str,
    *,
    recent: int,
    dry_run: bool,
    publish: CardPublisher | None,
) -> list[ReviewOutcome]:
    rows = await memory.rows.latest(
        RowFilter(namespaces=(namespace,), kinds=("observation",)), limit=recent
    )
    if not rows:
        return []
    keyed = {f"o{i}": row for i, row in enumerate(reversed(rows), start=1)}
    prompt = "Observations, oldest first:\n" + "\n".join(
        f"{key}: {row.content} (noted {row.created_at:%Y-%m-%d})" for key, row in keyed.items()
    )
    answer = await model.ask(
        "review",
        prompt,
        instructions=_INSTRUCTIONS,
        output_type=ReviewAnswer,
        check=_checker(list(keyed)),
    )
    verdicts: dict[str, Verdict] = {}
    for verdict in answer.verdicts if answer else []:
        verdicts.setdefault(verdict.key, verdict)  # the first verdict for a key wins
    outcomes = []
    for key, row in keyed.items():
        given = verdicts.get(key)
        if given is None or given.verdict == "keep":
            outcomes.append(ReviewOutcome(row=row, verdict="keep"))
            continue
        text = given.replacement if given.verdict == "supersede" else given.card
        outcome = ReviewOutcome(row=row, verdict=given.verdict, text=(text or "").strip() or None)
        outcomes.append(outcome if dry_run else await _apply(memory, outcome, publish))
    return outcomes


async def review(
    memory: Memory,
    model: SmallModel,
    *,
    namespace: str | None = None,
    recent: int = 20,
    dry_run: bool = False,
    publish: CardPublisher | None = None,
) -> list[ReviewOutcome]:
    """Review the `recent` newest active observations of each person (or of `namespace`).

    Promoted cards are published with `publish` when given (else kept locally only).
    """
    if namespace is not None:
        names = [namespace]
    else:
        names = [info.namespace for info in await memory.namespaces(prefix=USER_NAMESPACE_PREFIX)]
    outcomes: list[ReviewOutcome] = []
    for name in names:
        outcomes += await _review_namespace(
            memory, model, name, recent=recent, dry_run=dry_run, publish=publish
        )
    return outcomes
