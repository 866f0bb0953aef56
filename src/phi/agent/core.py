"""The one agent: a static base prompt, the dynamic blocks, and the tools.

Every entry point ends in `run(agent, deps, entry_prompt(entry))`. The agent's output is a
short log line; the work happens inside the run through tool calls. Blocks of the people in
a batch are attached for that run only and detached afterwards, even when the run fails.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Final

from pydantic_ai import Agent, BinaryContent, RunContext
from pydantic_ai.models import Model
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset

from phi.agent.deps import AgentConfig, Entry, PhiDeps
from phi.agent.images import images_for_run
from phi.agent.mcp_servers import mcp_toolsets
from phi.agent.prompt import (
    PromptBlock,
    PromptProfile,
    base_prompt,
    batch_user_prompt,
    compact_base,
    profile_blocks,
)
from phi.agent.tools import (
    bluesky_tools,
    cosmik_tools,
    intent_tools,
    memory_tools,
    search_tools,
    web_tools,
)
from phi.agent.tools._common import errors_as_results
from phi.agent.tools.blocks import block_tools
from phi.agent.tools.network import network_tools
from phi.agent.tools.services import service_tools
from phi.llm.sampling import answering
from phi.memory.learning import AttachedBlocks

__all__ = [
    "CORE_TOOLS",
    "ENTRY_PROMPTS",
    "PhiAgent",
    "build_agent",
    "entry_prompt",
    "run",
    "system_prompt",
    "toolset_for",
    "user_prompt_preview",
]

PhiAgent = Agent[PhiDeps, str]

ENTRY_PROMPTS: Final[dict[Entry, str]] = {
    "notifications": "process your new notifications batch — silence is fine.",
    "musing": "you have a moment. post if you want, or don't.",
    "reflection": "end of day. post a reflection if you have one.",
    "service_check": (
        "scheduled service check. report transitions in [SERVICE CHECK] to your owner if "
        "something went down or recovered; stay quiet when nothing changed."
    ),
    "review": "review what you have noticed lately.",
    "preview": "process your new notifications batch — silence is fine.",
}

CORE_TOOLS: Final = frozenset({"reply_to", "like_post", "post", "recall", "remember"})
"""The tools a tiny local model gets: enough to hold a conversation, few enough to choose
well from, and short enough to fit its context."""


def entry_prompt(entry: Entry) -> str:
    """The user prompt of a run started by `entry`."""
    return ENTRY_PROMPTS[entry]


def toolset_for(
    config: AgentConfig, *, only: frozenset[str] | None = None, answer_first: bool = False
) -> AbstractToolset[PhiDeps]:
    """Every tool phi has under `config` (or those named in `only`), limited to the batch's
    posts where they touch posts, with tool failures returned as results; with
    `answer_first`, only `reply_to` while somebody who spoke to phi waits (`_answer_first`)."""
    sets: list[AbstractToolset[PhiDeps]] = [
        bluesky_tools,
        memory_tools,
        intent_tools,
        cosmik_tools,
        web_tools,
        block_tools,
        network_tools,
    ]
    if config.services:
        sets.append(service_tools)
    if config.web_search is not None:
        sets.append(search_tools)
    combined: AbstractToolset[PhiDeps] = CombinedToolset(sets)
    if only is not None:
        allowed = only
        combined = combined.filtered(lambda _ctx, tool: tool.name in allowed)
    combined = combined.prepared(_batch_uris_only)
    if answer_first:
        combined = combined.prepared(_answer_first)
    return errors_as_results(combined)


BATCH_URI_TOOLS: Final = frozenset({"reply_to", "like_post", "repost_post"})
"""Tools that may only touch posts of the current batch."""


async def _batch_uris_only(
    ctx: RunContext[PhiDeps], tools: list[ToolDefinition]
) -> list[ToolDefinition]:
    """Offer the batch's post URIs as the only values of `uri`, and drop these tools when
    there is no batch: a model that decodes under a grammar (the tiny local one) then cannot
    invent a URI, and no model sees a tool it may not use."""
    batch = ctx.deps.batch
    uris = sorted(batch.uris) if batch is not None else []
    prepared = []
    for tool in tools:
        if tool.name not in BATCH_URI_TOOLS:
            prepared.append(tool)
        elif uris:
            schema = copy.deepcopy(tool.parameters_json_schema)
            schema["properties"]["uri"]["enum"] = uris
            prepared.append(replace(tool, parameters_json_schema=schema))
    return prepared


ADDRESSED: Final = frozenset({"mention", "reply", "quote"})
"""Notification reasons where somebody spoke to phi."""


async def _answer_first(
    ctx: RunContext[PhiDeps], tools: list[ToolDefinition]
) -> list[ToolDefinition]:
    """While a post that spoke to phi is unanswered in this run, offer only `reply_to`,
    limited to those posts: a tiny model (one action a run) offered a like, a post or a
    recall takes it, and the person who asked phi something hears nothing."""
    batch = ctx.deps.batch
    if batch is None:
        return tools
    answered = {p.in_reply_to for p in ctx.deps.activity.posts}
    waiting = sorted(
        item.notification.uri
        for item in batch.items
        if item.notification.reason in ADDRESSED and item.notification.uri not in answered
    )
    if not waiting:
        return tools
    prepared = []
    for tool in tools:
        if tool.name == "reply_to":
            schema = copy.deepcopy(tool.parameters_json_schema)
            schema["properties"]["uri"]["enum"] = waiting
            prepared.append(replace(tool, parameters_json_schema=schema))
    return prepared


def _as_system_prompt(name: str, block: PromptBlock) -> object:
    async def system_block(ctx: RunContext[PhiDeps]) -> str:
        return await block(ctx.deps)

    # pydantic-ai keys dynamic parts by qualified name: each block needs its own.
    system_block.__name__ = system_block.__qualname__ = f"phi_block_{name}"
    return system_block


def build_agent(
    model: Model | str,
    config: AgentConfig,
    *,
    tools: Sequence[str] | None = None,
    profile: PromptProfile = "full",
) -> PhiAgent:
    """phi's agent on `model`; `tools` narrows the tool set (e.g. `CORE_TOOLS` for a tiny
    model), by default every tool (web search only when configured) and the tools of the
    configured MCP servers; `profile="compact"` gives a small model the compact prompt
    (`phi.agent.prompt.compact`)."""
    # The small-model profile is the tiny brain's: one action a run, so somebody who spoke
    # to phi gets an answer before anything else is offered, and text the degenerate guard
    # refuses gets more tries (each with other sampling).
    small = profile == "compact"
    own = toolset_for(
        config, only=frozenset(tools) if tools is not None else None, answer_first=small
    )
    # A narrowed tool set is for a model that chooses badly among many: no external tools.
    external = mcp_toolsets(config.mcp_servers, beside=own) if tools is None else []
    static = (
        base_prompt(config.personality_file)
        if profile == "full"
        else compact_base(config.personality_file)
    )
    agent: PhiAgent = Agent(
        model,
        name="phi",
        deps_type=PhiDeps,
        output_type=str,
        system_prompt=static,
        retries=3 if small else 1,
        toolsets=[own, *external],
    )
    for name, block in profile_blocks(profile):
        agent.system_prompt(dynamic=True)(_as_system_prompt(name, block))  # type: ignore[arg-type]
    return agent


def _attached(deps: PhiDeps) -> AbstractAsyncContextManager[AttachedBlocks]:
    """The blocks of the batch's people (phi aside, thread participants included), attached
    for one run."""
    dids = sorted(set(deps.batch.people()) - {deps.client.me.did}) if deps.batch else []
    return deps.blocks.attach(dids)


async def run(agent: PhiAgent, deps: PhiDeps, prompt: str | None = None) -> str:
    """One run: attach the batch's people's blocks, run, detach; returns the log line. A
    model that sees gets the batch's pictures with the user prompt (`phi.agent.images`).

    The run declares the posts it answers (`phi.llm.answering`): a small model's sampling
    steers away from copying them; other models ignore it."""
    texts = [item.text for item in deps.batch.items] if deps.batch else []
    names = [handle.split(".")[0] for handle in deps.batch.people().values()] if deps.batch else []
    text = prompt or entry_prompt(deps.entry)
    async with _attached(deps):
        user_prompt = batch_user_prompt(text, await images_for_run(deps, model=agent.model))
        with answering(texts, names=names):
            result = await agent.run(user_prompt, deps=deps)
    return result.output


async def user_prompt_preview(agent: PhiAgent, deps: PhiDeps) -> str:
    """The user prompt `run` would send for `deps`, as text: each picture a model that sees
    would get is one line (media type, size, source), never its bytes."""
    user_prompt = batch_user_prompt(
        entry_prompt(deps.entry), await images_for_run(deps, model=agent.model)
    )
    if isinstance(user_prompt, str):
        return user_prompt
    return "\n".join(
        part
        if isinstance(part, str)
        else f"[image part: {part.media_type}, {len(part.data):,} bytes, from {part.identifier}]"
        if isinstance(part, BinaryContent)
        else f"[{type(part).__name__}]"
        for part in user_prompt
    )


async def system_prompt(agent: PhiAgent, deps: PhiDeps) -> str:
    """The exact system prompt `run` would send for `deps`, blocks attached as in a run."""
    async with _attached(deps):
        parts = await agent.system_prompt_parts(deps=deps)
    return "\n\n".join(p.content for p in parts if p.content)
