"""Tools over phi's memory: recalling, remembering, and the per-person blocks.

Recall never mixes people: a question about one person reads only their namespace, and
only for the people of the current batch, the owner, or phi itself (its own notes); anyone
else is refused before their name is even looked up. A person's block is readable and
writable only while they are part of the run (their block is attached).
"""

from __future__ import annotations

from collections.abc import Awaitable

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from phi.agent.context import with_rows
from phi.agent.deps import PhiDeps
from phi.agent.outcomes import Refused
from phi.agent.tools._common import resolve_person
from phi.agent.tools.intent import OBSERVATIONS_ARCHIVE
from phi.atproto import CosmikCard, NotFound
from phi.errors import InvalidInput, NamespaceNotFound
from phi.memory import Found, NewRow, user_namespace
from phi.memory.learning import EPISODIC, Block, user_label

__all__ = ["memory_tools"]

memory_tools = FunctionToolset[PhiDeps]()


def _render(deps: PhiDeps, found: Found) -> str:
    lines = [
        f"- ({h.row.kind}, trust {h.row.trust}, {deps.age(h.row.created_at)}) {h.row.content}"
        for h in found
    ] or ["nothing relevant in memory"]
    if found.unembedded:
        # Stored but not yet embedded: the model should not take "not found" for "never
        # said", and words from the memory still reach it.
        lines.append(
            f"({found.unembedded} newer memories here are not searchable by meaning yet: "
            "if the answer is missing, ask again with words it would contain)"
        )
    return "\n".join(lines)


OWN_NOTES = (EPISODIC, OBSERVATIONS_ARCHIVE)
"""What phi recalls about itself: its notes and archived observations."""


async def _recallable(deps: PhiDeps, about: str) -> tuple[tuple[str, ...], str] | Refused:
    """The namespaces `recall(about=...)` may read, and who they are about; a refusal for
    anyone but the batch's people, the owner and phi. Nobody outside the batch is looked up
    on the network (only the owner's handle, when the question names a DID)."""
    wanted = about.strip().removeprefix("@").lower()
    me = deps.client.me
    if wanted in (me.did, me.handle.lower()):
        return OWN_NOTES, f"@{me.handle}"
    people = deps.batch.author_handles() if deps.batch is not None else {}
    if any(wanted in (did, handle.lower()) for did, handle in people.items()):
        did, handle = await resolve_person(deps, wanted)  # found in the batch, no lookup
    elif (owner_did := await _owner_did(deps, wanted)) is not None:
        did, handle = owner_did, str(deps.owner_handle)
    else:
        return Refused(
            refused=f"recall about {about!r} is not allowed: only people in this batch, your "
            "owner, or yourself; other people's memories stay private"
        )
    return (user_namespace(did),), f"@{handle}"


async def _owner_did(deps: PhiDeps, wanted: str) -> str | None:
    """The owner's DID when `wanted` (a lowercase handle, or a DID) names the owner."""
    owner = deps.owner_handle
    if owner is None or (wanted != owner and not wanted.startswith("did:")):
        return None
    try:
        did = await deps.client.resolve_handle(owner)
    except NotFound:
        return None  # nobody holds the owner's handle now
    return did if wanted in (owner, did) else None


@memory_tools.tool
async def recall(
    ctx: RunContext[PhiDeps], query: str, about: str | None = None, limit: int = 8
) -> str | Refused:
    """Search your memory. About a person in this batch (or your owner): everything you
    know of them, and only of them. Without `about`: your own notes and archived
    observations.

    Args:
        query: What you are trying to remember.
        about: The handle (or DID) of a person in this batch, or of your owner.
        limit: How many memories (1-20).
    """
    deps = ctx.deps
    limit = max(1, min(limit, 20))
    if about:
        allowed = await _recallable(deps, about)
        if isinstance(allowed, Refused):
            return allowed
        namespaces, who = allowed
    else:
        namespaces, who = OWN_NOTES, ""
    present = await with_rows(deps.memory, list(namespaces))
    if not present:
        return f"no memories of {who} yet" if who else "no notes of your own yet"
    try:
        found = await deps.memory.search(query, namespace=present, limit=limit, now=deps.now)
    except NamespaceNotFound:
        found = Found()
    return _render(deps, found)


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
        NewRow(
            content=content,
            namespace=EPISODIC,
            kind="note",
            tags=(tags or [])[:3],
            source_uris=sources[:20],
            created_at=deps.now,
        )
    )
    done = f"remembered ({row.row_id})"
    if public:
        ref = await deps.client.create_record(CosmikCard.note(content))
        deps.wrote("public_memory")
        done += f"; public card {ref.uri}"
    deps.activity.record(f"remembered: {content}")
    return done


async def _attached_label(deps: PhiDeps, handle: str) -> tuple[str, str] | Refused:
    did, shown = await resolve_person(deps, handle)
    label = user_label(did)
    if label not in deps.blocks.attached:
        return Refused(
            refused=f"@{shown}'s block is not open in this run; only people in this batch"
        )
    return label, shown


async def _written(write: Awaitable[Block]) -> Block:
    """The block after `write`; a write the model can fix (over the limit, text not found)
    is asked again."""
    try:
        return await write
    except InvalidInput as exc:
        raise ModelRetry(str(exc)) from exc


@memory_tools.tool
async def user_block_view(ctx: RunContext[PhiDeps], handle: str) -> str | Refused:
    """Read your notes block about a person in this batch.

    Args:
        handle: Their handle.
    """
    found = await _attached_label(ctx.deps, handle)
    if isinstance(found, Refused):
        return found
    return (await ctx.deps.blocks.view(found[0])).render()


@memory_tools.tool
async def user_block_append(ctx: RunContext[PhiDeps], handle: str, text: str) -> str | Refused:
    """Add a line to your notes block about a person in this batch (limited in size:
    prefer replacing stale lines over piling up).

    Args:
        handle: Their handle.
        text: The line to add.
    """
    found = await _attached_label(ctx.deps, handle)
    if isinstance(found, Refused):
        return found
    block = await _written(ctx.deps.blocks.append(found[0], text))
    ctx.deps.activity.record(f"block @{found[1]}: appended {text!r}")
    return f"appended ({len(block.content)}/{block.limit} chars)"


@memory_tools.tool
async def user_block_replace(
    ctx: RunContext[PhiDeps], handle: str, old: str, new: str
) -> str | Refused:
    """Replace exact text in your notes block about a person in this batch.

    Args:
        handle: Their handle.
        old: Text now in the block (view it first).
        new: What replaces it (empty to delete).
    """
    found = await _attached_label(ctx.deps, handle)
    if isinstance(found, Refused):
        return found
    block = await _written(ctx.deps.blocks.replace(found[0], old, new))
    ctx.deps.activity.record(f"block @{found[1]}: replaced {old!r}")
    return f"replaced ({len(block.content)}/{block.limit} chars)"


@memory_tools.tool
async def user_block_set(ctx: RunContext[PhiDeps], handle: str, content: str) -> str | Refused:
    """Rewrite your whole notes block about a person in this batch.

    Args:
        handle: Their handle.
        content: The complete new block.
    """
    found = await _attached_label(ctx.deps, handle)
    if isinstance(found, Refused):
        return found
    block = await _written(ctx.deps.blocks.set(found[0], content))
    ctx.deps.activity.record(f"block @{found[1]}: rewritten")
    return f"set ({len(block.content)}/{block.limit} chars)"
