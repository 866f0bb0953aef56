"""Session preload: recent + relevant + connected rows, rendered within a token budget.

Seed 004's "wake up already knowing": before the first reply, the caller gets a context
window of labelled blocks. Each line carries its kind, trust and age, so the model can
weigh a verbatim exchange above an extracted fact and an old note below a fresh one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from phi.memory.embed import Embedder
from phi.memory.model import Trust
from phi.memory.recall import Recalled, RecallRecipe, recall
from phi.memory.serial import to_json
from phi.memory.store.base import RowFilter, RowStore, row_matches

__all__ = ["ContextWindow", "build_window", "estimate_tokens", "format_age", "render_window"]

TRUST_NOTE: Final[dict[Trust, str]] = {
    "high": "verbatim, high trust",
    "medium": "extracted, medium trust",
    "low": "synthesised, low trust",
    "lowest": "background research, lowest trust",
}
MAX_ITEM_CHARS: Final = 1200
"""A longer row is cut in the window; the full text stays one `recall` away."""
_SHARES: Final = (("recent", 0.3), ("relevant", 0.5), ("connected", 0.2))


def estimate_tokens(text: str) -> int:
    """A model-independent token estimate (about four characters a token)."""
    return math.ceil(len(text) / 4)


def format_age(seconds: float) -> str:
    """`'just now'`, `'5m ago'`, `'3h ago'`, `'12d ago'`, `'2y ago'`."""
    for unit, size in (("y", 365 * 86_400), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


@dataclass(frozen=True, kw_only=True)
class ContextWindow:
    """What a session starts with."""

    hint: str
    recent: tuple[Recalled, ...]
    relevant: tuple[Recalled, ...]
    connected: tuple[Recalled, ...]
    text: str
    """The rendered blocks, ready for a system prompt."""
    tokens: int
    """Estimated tokens of `text`; never above the budget asked for."""

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (`phi.memory.serial`)."""
        json_value: dict[str, object] = to_json(self)
        return json_value


def _line(item: Recalled) -> str:
    row = item.row
    content = " ".join(row.content.split())
    if len(content) > MAX_ITEM_CHARS:
        content = content[: MAX_ITEM_CHARS - 1] + "…"
    return (
        f"- [{row.kind}, {TRUST_NOTE[row.trust]}, {format_age(item.age_seconds)}, "
        f"id {row.row_id}] {content}"
    )


def _header(section: str, hint: str, scope: str) -> str:
    if section == "recent":
        return f"[RECENT MEMORY — {scope}]"
    if section == "relevant":
        return f"[RELEVANT MEMORY — {scope} — for: {' '.join(hint.split())[:120]}]"
    return f"[CONNECTED MEMORY — {scope} — linked to the rows above]"


def render_window(
    hint: str,
    scope: str,
    sections: Mapping[str, Sequence[Recalled]],
    *,
    budget_tokens: int,
) -> ContextWindow:
    """Fill the budget section by section; a section's unused share passes to the next."""
    kept: dict[str, list[Recalled]] = {name: [] for name, _ in _SHARES}
    blocks: list[str] = []
    used, carry = 0, 0
    for name, share in _SHARES:
        allowance = int(budget_tokens * share) + carry
        header = _header(name, hint, scope)
        lines: list[str] = []
        spent = estimate_tokens(header) + 1
        for item in sections.get(name, ()):
            line = _line(item)
            cost = estimate_tokens(line) + 1
            if spent + cost > allowance:
                continue
            lines.append(line)
            kept[name].append(item)
            spent += cost
        if lines:
            block = "\n".join([header, *lines])
            blocks.append(block)
            used += spent
            carry = allowance - spent
        else:
            carry = allowance
    text = "\n\n".join(blocks)
    assert estimate_tokens(text) <= max(budget_tokens, 0) or not text
    return ContextWindow(
        hint=hint,
        recent=tuple(kept["recent"]),
        relevant=tuple(kept["relevant"]),
        connected=tuple(kept["connected"]),
        text=text,
        tokens=estimate_tokens(text),
    )


async def build_window(
    store: RowStore,
    embedder: Embedder,
    hint: str,
    where: RowFilter,
    *,
    budget_tokens: int,
    recent: int,
    relevant: int,
    now: datetime,
    recipe: RecallRecipe,
) -> ContextWindow:
    """Choose the rows of a window: relevant first, then recent, then their neighbours."""
    found = (
        await recall(store, embedder, hint, where, limit=relevant, now=now, recipe=recipe)
        if hint.strip()
        else []
    )
    seen = {r.row.row_id for r in found}
    latest = [
        Recalled(row=r, score=0.0, matched_by="graph", age_seconds=r.age_seconds(now))
        for r in await store.latest(where, limit=recent + len(seen))
        if r.row_id not in seen
    ][:recent]
    seen |= {r.row.row_id for r in latest}
    connected = await _connected(store, found, where, seen, now)
    scope = ", ".join(where.namespaces) if where.namespaces else "all namespaces"
    sections = {"recent": latest, "relevant": found, "connected": connected}
    return render_window(hint, scope, sections, budget_tokens=budget_tokens)


async def _connected(
    store: RowStore, seeds: Sequence[Recalled], where: RowFilter, seen: set[str], now: datetime
) -> list[Recalled]:
    """Rows linked to the seeds, weighted by edge weight times the seed's score."""
    if not seeds:
        return []
    weights: dict[str, float] = {}
    seed_score = {s.row.row_id: s.score for s in seeds}
    for edge in await store.edges(list(seed_score)):
        for a, b in ((edge.src, edge.dst), (edge.dst, edge.src)):
            if a in seed_score and b not in seen:
                weights[b] = weights.get(b, 0.0) + edge.weight * seed_score[a]
    connected = [
        Recalled(row=r, score=weights[r.row_id], matched_by="graph", age_seconds=r.age_seconds(now))
        for r in await store.get_rows(list(weights))
        if row_matches(r, where)  # a neighbour in another person's namespace stays out
    ]
    return sorted(connected, key=lambda r: -r.score)
