"""phi's system prompt: a static base plus dynamic blocks (seed 003).

Each block is an async function of the run's `PhiDeps` that returns "" when it does not
apply; its cache time lives with it (`PromptCaches`). The agent registers every block as a
dynamic system prompt, in the order of `BLOCKS` (`phi.agent.system_prompt` shows the result).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from phi.agent.deps import PhiDeps
from phi.agent.prompt.batch import (
    batch_user_prompt,
    first_interaction_block,
    notifications_block,
)
from phi.agent.prompt.compact import (
    COMPACT_BLOCKS,
    COMPACT_EXAMPLES,
    PromptProfile,
    compact_base,
    fit_block,
)
from phi.agent.prompt.core_blocks import core_blocks_block
from phi.agent.prompt.day import recent_conversations_block, service_health_block
from phi.agent.prompt.discovery import discovery_block
from phi.agent.prompt.operator import operational_history_block, operator_block
from phi.agent.prompt.people import episodic_block, people_blocks
from phi.agent.prompt.state import (
    goals_block,
    identity_block,
    now_block,
    observations_block,
    operations_block,
    public_memory_block,
    run_block,
    self_awareness_block,
    self_state_block,
)
from phi.agent.prompt.static import OPERATIONAL_RULES, base_prompt, default_personality
from phi.agent.tools.services import known_services_block

__all__ = [
    "BLOCKS",
    "COMPACT_BLOCKS",
    "COMPACT_EXAMPLES",
    "OPERATIONAL_RULES",
    "PromptBlock",
    "PromptProfile",
    "base_prompt",
    "batch_user_prompt",
    "compact_base",
    "default_personality",
    "fit_block",
    "profile_blocks",
]

PromptBlock = Callable[[PhiDeps], Awaitable[str]]


async def _notifications(deps: PhiDeps) -> str:
    return notifications_block(deps)


async def _first_interaction(deps: PhiDeps) -> str:
    return first_interaction_block(deps)


BLOCKS: Final[tuple[tuple[str, PromptBlock], ...]] = (
    ("identity", identity_block),
    ("core_blocks", core_blocks_block),
    ("operator", operator_block),
    ("operational_history", operational_history_block),
    ("now", now_block),
    ("goals", goals_block),
    ("self_awareness", self_awareness_block),
    ("self_state", self_state_block),
    ("observations", observations_block),
    ("discovery", discovery_block),
    ("operations", operations_block),
    ("known_services", known_services_block),
    ("run", run_block),
    ("recent_conversations", recent_conversations_block),
    ("service_health", service_health_block),
    ("notifications", _notifications),
    ("people", people_blocks),
    ("episodic", episodic_block),
    ("first_interaction", _first_interaction),
    ("public_memory", public_memory_block),
)
"""The dynamic blocks, in prompt order."""


def _fitted(block: PromptBlock, budget: int) -> PromptBlock:
    async def fitted(deps: PhiDeps) -> str:
        return fit_block(await block(deps), budget)

    return fitted


def profile_blocks(profile: PromptProfile) -> tuple[tuple[str, PromptBlock], ...]:
    """The dynamic blocks of a prompt profile, in prompt order (the compact ones fitted to
    their budgets)."""
    if profile == "full":
        return BLOCKS
    return tuple(
        (name, _fitted(block, COMPACT_BLOCKS[name]))
        for name, block in BLOCKS
        if name in COMPACT_BLOCKS
    )
