"""Tools over phi's memory: recalling, remembering, and the per-person blocks.

Recall never mixes people: a question about one person reads only their namespace. A
person's block is writable only while they are part of the run (their block is attached).
"""

from __future__ import annotations

from pydantic_ai import RunContext
from pydantic_ai.toolsets import FunctionToolset

from phi.agent.context import with_rows
from phi.agent.deps import PhiDeps
from phi.agent.tools._common import resolve_person
from phi.agent.tools.intent import OBSERVATIONS_ARCHIVE
from phi.atproto import CosmikCard
from phi.errors import NamespaceNotFound
from phi.memory import Recalled, user_namespace
from phi.memory.learning import EPISODIC, user_label

__all__ = ["memory_tools"]

memory_tools = FunctionToolset[PhiDeps]()


def _render(deps: PhiDeps, hits: list[Recalled]) -> str:
    if not hits:
        return "nothing relevant in memory"
    lines = []
    for h in hits:
        age = deps.age(h.row.created_at)
        lines.append(f"- ({h.row.kind}, trust {h.row.trust}, {age}) {h.row.content}")
    return "\n".join(lines)


@memory_tools.tool
async def recall(
    ctx: RunContext[PhiDeps], query: str, about: str | None = None, limit: int = 8
) -> str:
    """Search your memory. About a person: everything you know of them (only them). Without
    `about`: your own notes and archived observations.

    Args:
        query: What you are trying to remember.
        about: A person's handle (or DID) to recall about.
        limit: How many memories (1-20).
    """
    deps = ctx.deps
    limit = max(1, min(limit, 20))
    if about:
        did, handle = await resolve_person(deps, about)
        namespaces: list[str] = [user_namespace(did)]
    else:
        namespaces = [EPISODIC, OBSERVATIONS_ARCHIVE]
    present = await with_rows(deps.memory, namespaces)
    if not present:
        return f"no memories of @{handle} yet" if about else "no notes of your own yet"
    try:
        hits = await deps.memory.search(query, namespace=present, limit=limit, now=deps.now)
    except NamespaceNotFound:
        hits = []
    return _render(deps, hits)


@memory_tools.tool
async def remember(
    ctx: RunContext[PhiDeps], content: str, public: bool = False, tags: list[str] | None = None
) -> str:
    """Keep a note of your own (episodic memory) for later. Exchanges are remembered
    automatically: use this for what you concluded, learned or want to follow up.

    Args:
        content: The note, self-contained (say who and what; it is read out of context).
        public: Also publish it as a public note card on your PDS.
        tags: Up to 3 short topic tags.
    """
    deps = ctx.deps
    sources = sorted(deps.batch.uris) if deps.batch is not None else []
    row = await deps.memory.remember(
        content,
        namespace=EPISODIC,
        kind="note",
        tags=(tags or [])[:3],
        source_uris=sources[:20],
        created_at=deps.now,
    )
    done = f"remembered ({row.row_id})"
    if public:
        ref = await deps.client.create_record(CosmikCard.note(content))
        deps.wrote("public_memory")
        done += f"; public card {ref.uri}"
    deps.activity.record(f"remembered: {content}")
    return done


async def _attached_label(deps: PhiDeps, handle: str) -> tuple[str, str] | str:
    did, shown = await resolve_person(deps, handle)
    label = user_label(did)
    if label not in deps.blocks.attached:
        return f"refused: @{shown}'s block is not open in this run; only people in the batch"
    return label, shown


@memory_tools.tool
async def user_block_view(ctx: RunContext[PhiDeps], handle: str) -> str:
    """Read your notes block about a person in this batch.

    Args:
        handle: Their handle.
    """
    found = await _attached_label(ctx.deps, handle)
    if isinstance(found, str):
        return found
    return (await ctx.deps.blocks.view(found[0])).render()


@memory_tools.tool
async def user_block_append(ctx: RunContext[PhiDeps], handle: str, text: str) -> str:
    """Add a line to your notes block about a person in this batch (limited in size:
    prefer replacing stale lines over piling up).

    Args:
        handle: Their handle.
        text: The line to add.
    """
    found = await _attached_label(ctx.deps, handle)
    if isinstance(found, str):
        return found
    block = await ctx.deps.blocks.append(found[0], text)
    ctx.deps.activity.record(f"block @{found[1]}: appended {text!r}")
    return f"appended ({len(block.content)}/{block.limit} chars)"


@memory_tools.tool
async def user_block_replace(ctx: RunContext[PhiDeps], handle: str, old: str, new: str) -> str:
    """Replace exact text in your notes block about a person in this batch.

    Args:
        handle: Their handle.
        old: Text now in the block (view it first).
        new: What replaces it (empty to delete).
    """
    found = await _attached_label(ctx.deps, handle)
    if isinstance(found, str):
        return found
    block = await ctx.deps.blocks.replace(found[0], old, new)
    ctx.deps.activity.record(f"block @{found[1]}: replaced {old!r}")
    return f"replaced ({len(block.content)}/{block.limit} chars)"


@memory_tools.tool
async def user_block_set(ctx: RunContext[PhiDeps], handle: str, content: str) -> str:
    """Rewrite your whole notes block about a person in this batch.

    Args:
        handle: Their handle.
        content: The complete new block.
    """
    found = await _attached_label(ctx.deps, handle)
    if isinstance(found, str):
        return found
    block = await ctx.deps.blocks.set(found[0], content)
    ctx.deps.activity.record(f"block @{found[1]}: rewritten")
    return f"set ({len(block.content)}/{block.limit} chars)"
