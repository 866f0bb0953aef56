"""Per-author memory blocks and the synthesized episodic block.

For each author of the batch, memory is shown by kind and labelled by trust, so phi weighs a
verbatim exchange above an extracted fact above a summary above background research (seed
003). Everything here comes from recall (hybrid search scoped to that person's namespace,
never another's) and the person's block.
"""

from __future__ import annotations

from collections.abc import Sequence

from phi.agent.context import with_rows
from phi.agent.deps import PhiDeps
from phi.agent.prompt.state import goal_texts
from phi.errors import NamespaceNotFound
from phi.memory import Recalled, user_namespace
from phi.memory.learning import EPISODIC, synthesize_episodic, user_label
from phi.memory.learning.blocks import default_content
from phi.memory.model import Kind

__all__ = ["episodic_block", "people_blocks"]

_SECTIONS: tuple[tuple[Kind, str, int], ...] = (
    ("summary", "IMPRESSION OF @{h} — synthesized summary, trust low", 1),
    ("observation", "OBSERVATIONS ABOUT @{h} — extracted facts, trust medium", 8),
    ("interaction", "PAST EXCHANGES WITH @{h} — verbatim, trust high", 5),
    ("exploration_note", "BACKGROUND RESEARCH ON @{h} — public activity, trust lowest", 3),
)


def _query(deps: PhiDeps, did: str) -> str:
    assert deps.batch is not None
    texts = [i.notification.text for i in deps.batch.items if i.notification.author_did == did]
    if not texts:  # a participant of the thread: what they said there
        posts = (p for i in deps.batch.items if i.thread is not None for p in i.thread.posts)
        texts = list(dict.fromkeys(p.text for p in posts if p.author_did == did))
    return " ".join(t for t in texts if t.strip()) or "conversation"


def _age(deps: PhiDeps, hit: Recalled) -> str:
    return deps.age(hit.row.created_at)


def _line(deps: PhiDeps, kind: Kind, hit: Recalled) -> str:
    row = hit.row
    if kind == "interaction":
        body = "\n  ".join(row.content.splitlines())
        return f"- {_age(deps, hit)}:\n  {body}"
    sources = f", {len(row.source_uris)} source(s)" if row.source_uris else ""
    return f"- {row.content} ({_age(deps, hit)}{sources})"


async def _person(deps: PhiDeps, did: str, handle: str) -> Sequence[str]:
    out: list[str] = []
    block_label = user_label(did)
    block = await deps.blocks.view(block_label)
    if block.content.strip() and block.content != default_content(block_label):
        out.append(f"[USER BLOCK @{handle} — your notes, {len(block.content)}/{block.limit} chars]")
        out.append(block.content.strip())
    namespace = user_namespace(did)
    if not await with_rows(deps.memory, [namespace]):  # a stranger: nothing to search
        return out
    # One search per kind, the query embedded once for all of them.
    found = await deps.memory.search_kinds(
        _query(deps, did),
        {kind: limit for kind, _, limit in _SECTIONS},
        namespace=namespace,
        now=deps.now,
    )
    _show_recalled(deps, handle, [h for kind, _, _ in _SECTIONS for h in found[kind]])
    for kind, label, _ in _SECTIONS:
        hits = found[kind]
        if kind == "interaction":  # a conversation reads in order
            hits.sort(key=lambda h: h.row.created_at)
        if hits:
            out.append(f"[{label.format(h=handle)}]")
            out.extend(_line(deps, kind, h) for h in hits)
    return out


_SHOWN_CHARS = 96
"""How much of a recalled row the stream shows (one terminal line with its kind and score)."""


def _show_recalled(deps: PhiDeps, handle: str, hits: Sequence[Recalled]) -> None:
    """Stream what was recalled about `handle`, best first, so whoever watches (the
    sandbox) sees memory at work even when the model's words are weak."""
    ranked = sorted(hits, key=lambda h: h.score, reverse=True)
    deps.activity.show(f"recalled about @{handle}: {len(ranked)} row(s) (kind, score, text)")
    for hit in ranked:
        text = " / ".join(line.strip() for line in hit.row.content.splitlines() if line.strip())
        if len(text) > _SHOWN_CHARS:
            text = text[: _SHOWN_CHARS - 1] + "…"
        deps.activity.show(f"  {hit.row.kind:<16} {hit.score:.2f}  {text}")


async def people_blocks(deps: PhiDeps) -> str:
    if deps.batch is None:
        return ""
    me = deps.client.me.did
    out: list[str] = []
    for did, handle in deps.batch.people().items():
        if did != me:
            out.extend(await _person(deps, did, handle))
    return "\n".join(out)


async def episodic_block(deps: PhiDeps) -> str:
    """phi's own notes relevant to the batch (or to the scheduled run), synthesized when a
    small model is available, otherwise the raw notes newest first."""
    if deps.batch is not None:
        query = " ".join(i.notification.text for i in deps.batch.items if i.notification.text)
    else:
        query = deps.last_post_text or deps.entry
    if not query.strip():
        return ""
    if deps.small is not None and deps.config.synthesize:
        goals = await goal_texts(deps)
        result = await synthesize_episodic(
            deps.memory, deps.small, query, goals=goals, now=deps.now
        )
        text = result.text
    else:
        hits: list[Recalled]
        try:
            hits = await deps.memory.search(query, namespace=EPISODIC, limit=6, now=deps.now)
        except NamespaceNotFound:
            hits = []
        text = "\n".join(f"- {_age(deps, h)}: {h.row.content}" for h in hits)
    return f"[RELEVANT MEMORIES — synthesized]\n{text}" if text.strip() else ""
