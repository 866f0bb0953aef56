"""Tools over phi's durable intent on its PDS: observations, goals, the mention list, labels.

Goals, the mention list and labels belong to the owner: those tools go through the owner
gate (`phi.agent.gate`), which asks for approval by itself when needed.
"""

from __future__ import annotations

from typing import Literal

from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.toolsets import FunctionToolset

from phi.agent import gate
from phi.agent.deps import Action, Approval, PhiDeps
from phi.agent.outcomes import Refused
from phi.agent.tools._common import request_thread, resolve_person
from phi.atproto import AttentionPool, Goal, MentionConsent, Observation, StoredRecord
from phi.memory import Memory, NewRow

__all__ = ["OBSERVATIONS_ARCHIVE", "MemoryArchive", "intent_tools"]

OBSERVATIONS_ARCHIVE = "phi-observations"
"""Where observations go when they leave the attention pool: searchable, not in the prompt."""

intent_tools = FunctionToolset[PhiDeps]()


class MemoryArchive:
    """Archives observations leaving the pool into the `phi-observations` namespace."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory

    async def archive_observation(self, observation: StoredRecord[Observation]) -> None:
        value = observation.value
        text = value.content if not value.reasoning else f"{value.content} — {value.reasoning}"
        await self.memory.remember(
            NewRow(
                content=text,
                namespace=OBSERVATIONS_ARCHIVE,
                kind="note",
                source_uris=[observation.uri, *value.source_uris],
                created_at=value.created_at,
            )
        )


def _pool(deps: PhiDeps) -> AttentionPool:
    return AttentionPool(deps.client, archive=MemoryArchive(deps.memory))


@intent_tools.tool
async def observe(
    ctx: RunContext[PhiDeps], content: str, reasoning: str, source_uris: list[str] | None = None
) -> str:
    """Note something you noticed and may act on later (your attention pool holds 5; the
    oldest is archived to memory when a sixth arrives).

    Args:
        content: What you noticed, one line.
        reasoning: Why it matters to you.
        source_uris: Where you noticed it (post URIs or URLs).
    """
    observed = await _pool(ctx.deps).observe(
        Observation(content=content, reasoning=reasoning, source_uris=source_uris or [])
    )
    ctx.deps.wrote()
    archived = f"; archived {len(observed.archived)} older" if observed.archived else ""
    ctx.deps.activity.record(f"observed: {content}")
    return f"observed [{observed.ref.rkey}]{archived}"


@intent_tools.tool
async def drop_observation(ctx: RunContext[PhiDeps], rkey: str) -> str:
    """Take an observation out of your attention pool (acted on, or no longer relevant).

    Args:
        rkey: Its rkey, as shown in [ACTIVE OBSERVATIONS].
    """
    await _pool(ctx.deps).drop(rkey)
    ctx.deps.wrote()
    ctx.deps.activity.record(f"dropped observation {rkey}")
    return f"dropped [{rkey}] (archived to memory)"


@intent_tools.tool
async def list_goals(ctx: RunContext[PhiDeps]) -> str:
    """Your goals with their rkeys, fresh from your PDS."""
    goals = await ctx.deps.client.list_records(Goal, limit=50)
    if not goals:
        return "no goals set"
    return "\n".join(
        f"[{g.rkey}] {g.value.title}: {g.value.description} (progress: {g.value.progress_signal})"
        for g in goals
    )


@intent_tools.tool
async def propose_goal_change(
    ctx: RunContext[PhiDeps],
    title: str,
    description: str,
    progress_signal: str,
    rkey: str | None = None,
    remove: bool = False,
    discussed_in: str | None = None,
) -> str | Refused:
    """Add, change or remove one of your goals. Owner-gated: without approval this posts an
    authorization request; when your owner likes it, call again with the same arguments.

    Args:
        title: The goal's short name.
        description: What it means.
        progress_signal: How anyone can tell it is progressing.
        rkey: The goal to change or remove (from [GOALS]); none adds a new goal.
        remove: Remove the goal at `rkey` instead of changing it.
        discussed_in: URI of the batch post where this came up.
    """
    deps = ctx.deps
    if remove and rkey is None:
        raise ModelRetry("say which goal to remove (its rkey from [GOALS])")
    action = Action.of(
        "propose_goal_change",
        title=title,
        description=description,
        progress_signal=progress_signal,
        rkey=rkey or "",
        remove=remove,
    )
    outcome = await gate.gated(
        deps, action, f"goal: {title}", thread_uri=request_thread(deps, discussed_in)
    )
    if not isinstance(outcome, Approval):
        return outcome
    if remove and rkey is not None:
        await deps.client.delete_record(Goal, rkey)
        done = f"removed goal [{rkey}]"
    else:
        goal = Goal(title=title, description=description, progress_signal=progress_signal)
        if rkey is not None:
            old = await deps.client.get_record(Goal, rkey)
            goal = goal.model_copy(
                update={"created_at": old.value.created_at, "updated_at": deps.now}
            )
            ref = await deps.client.put_record(goal, rkey)
        else:
            ref = await deps.client.create_record(goal)
        done = f"goal [{ref.rkey}] is now: {title}"
    deps.wrote("goals", "self_awareness")
    deps.activity.record(done)
    return done


@intent_tools.tool
async def manage_mentionable(
    ctx: RunContext[PhiDeps],
    handle: str,
    action: Literal["add", "remove"],
    discussed_in: str | None = None,
) -> str | Refused:
    """Add a handle to the list of people you may @-mention, or remove it. Owner-gated.

    Args:
        handle: The person's handle.
        action: `add` or `remove`.
        discussed_in: URI of the batch post where they gave (or withdrew) consent.
    """
    deps = ctx.deps
    did, shown = await resolve_person(deps, handle)
    key = shown.lower()
    outcome = await gate.gated(
        deps,
        Action.of("manage_mentionable", handle=key, action=action),
        f"{action} @{key} on the mention list",
        thread_uri=request_thread(deps, discussed_in),
    )
    if not isinstance(outcome, Approval):
        return outcome
    if action == "add":
        await deps.client.put_record(MentionConsent(handle=key, did=did, note=discussed_in), key)
    else:
        await deps.client.delete_record(MentionConsent, key)
    deps.wrote()
    deps.activity.record(f"mention list: {action} @{key}")
    return f"mention list: {action} @{key} done"


@intent_tools.tool
async def manage_labels(
    ctx: RunContext[PhiDeps], labels: list[str], discussed_in: str | None = None
) -> str | Refused:
    """Set the self-labels on your profile (e.g. `bot`), replacing the current ones. Owner-gated.

    Args:
        labels: The complete new list of labels (lowercase words).
        discussed_in: URI of the batch post where this came up.
    """
    deps = ctx.deps
    wanted = sorted({label.strip().lower() for label in labels if label.strip()})
    outcome = await gate.gated(
        deps,
        Action.of("manage_labels", labels=wanted),
        f"labels: {', '.join(wanted) or '(none)'}",
        thread_uri=request_thread(deps, discussed_in),
    )
    if not isinstance(outcome, Approval):
        return outcome
    await deps.client.set_self_labels(wanted)
    deps.wrote()
    deps.activity.record(f"labels set: {wanted}")
    return f"labels are now: {', '.join(wanted) or '(none)'}"
