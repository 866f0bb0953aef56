"""Relationship summary: one low-trust `summary` row per person, refreshed when enough new
exchanges have arrived since the last one.

"New" is an explicit marker (`Store.unmarked("summary", ...)`), like extraction's. A
refresh writes a new summary that supersedes the previous one, so the history of phi's
impression of a person stays inspectable with `Memory.history`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, Field

from phi.memory.learning._text import union
from phi.memory.learning.usage import SmallModel
from phi.memory.memory import Memory
from phi.memory.model import USER_NAMESPACE_PREFIX, NewRow, Row, utc_now
from phi.memory.store.base import RowFilter

__all__ = [
    "SUMMARY_PASS",
    "SummaryAnswer",
    "SummaryReport",
    "refresh_summaries",
    "refresh_summary",
]

SUMMARY_PASS: Final = "summary"
MAX_SOURCES: Final = 50
"""A summary cites its newest exchanges only: it rests on all of them, but a list of
hundreds of URIs helps nobody."""

_INSTRUCTIONS: Final = """\
You keep a short impression of an AI's relationship with one person: who they are to it,
what they talk about, how the conversations go. Update the previous impression with the
new exchanges; keep it under 120 words; do not invent facts."""


class SummaryAnswer(BaseModel):
    """The refreshed relationship summary."""

    summary: str = Field(description="the updated impression, under 120 words")


@dataclass(frozen=True, kw_only=True)
class SummaryReport:
    """What a refresh did."""

    namespace: str
    new_exchanges: int
    refreshed: bool
    """False when too few new exchanges arrived, or the model gave no usable answer."""
    summary: Row | None = None
    """The new summary row (`None` in a dry run: see `text`)."""
    text: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "new_exchanges": self.new_exchanges,
            "refreshed": self.refreshed,
            "row_id": self.summary.row_id if self.summary else None,
            "text": self.text,
        }


def _exchange(row: Row) -> str:
    return f"[{row.created_at:%Y-%m-%d}]\n{row.content}"


async def refresh_summary(
    memory: Memory,
    model: SmallModel,
    namespace: str,
    *,
    min_new: int = 5,
    limit: int = 100,
    dry_run: bool = False,
) -> SummaryReport:
    """Refresh `namespace`'s summary if at least `min_new` exchanges arrived since the last."""
    new = await memory.ledger.unmarked(
        SUMMARY_PASS,
        RowFilter(namespaces=(namespace,), kinds=("interaction",), statuses=None),
        limit=limit,
    )
    if len(new) < max(1, min_new):
        return SummaryReport(namespace=namespace, new_exchanges=len(new), refreshed=False)
    latest = await memory.rows.latest(
        RowFilter(namespaces=(namespace,), kinds=("summary",)), limit=1
    )
    previous = latest[0] if latest else None
    prompt = "\n\n".join(
        [
            f"PREVIOUS IMPRESSION:\n{previous.content if previous else '(none yet)'}",
            "NEW EXCHANGES:",
            *(_exchange(r) for r in new),
        ]
    )
    answer = await model.ask(
        "summarize", prompt, instructions=_INSTRUCTIONS, output_type=SummaryAnswer
    )
    text = " ".join(answer.summary.split()) if answer else ""
    if not text:
        return SummaryReport(namespace=namespace, new_exchanges=len(new), refreshed=False)
    if dry_run:
        return SummaryReport(namespace=namespace, new_exchanges=len(new), refreshed=True, text=text)
    author = next((r.author for r in reversed(new) if r.author), None)
    sources = union(*(r.source_uris for r in reversed(new)))[:MAX_SOURCES]
    row = await memory.remember(
        NewRow(
            content=text,
            namespace=namespace,
            kind="summary",
            trust="low",
            source_uris=sources,
            author=author,
            supersedes=previous.row_id if previous else None,
            meta={"learned_by": "summarize", "exchanges": len(new)},
        )
    )
    await memory.ledger.mark(SUMMARY_PASS, [r.row_id for r in new], at=utc_now())
    return SummaryReport(
        namespace=namespace, new_exchanges=len(new), refreshed=True, summary=row, text=text
    )


async def refresh_summaries(
    memory: Memory,
    model: SmallModel,
    *,
    namespace: str | None = None,
    min_new: int = 5,
    dry_run: bool = False,
) -> list[SummaryReport]:
    """`refresh_summary` for `namespace`, or for every `phi-users-*` namespace."""
    if namespace is not None:
        names = [namespace]
    else:
        names = [info.namespace for info in await memory.namespaces(prefix=USER_NAMESPACE_PREFIX)]
    return [
        await refresh_summary(memory, model, name, min_new=min_new, dry_run=dry_run)
        for name in names
    ]
