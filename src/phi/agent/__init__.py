"""phi the agent: one pydantic-ai agent, a deps object per run, a dynamic system prompt and
tools that decide and act inside the run (seeds 001 and 003).

`build_agent(model, config)` makes the agent; an entry point builds `PhiDeps` (for a
notification batch: `build_batch`) and calls `run(agent, deps)`. `system_prompt(agent, deps)`
is the exact prompt of such a run (`phi prompt --preview`).
"""

from phi.agent.cache import PromptCaches
from phi.agent.context import build_batch
from phi.agent.core import (
    CORE_TOOLS,
    ENTRY_PROMPTS,
    PhiAgent,
    build_agent,
    entry_prompt,
    run,
    system_prompt,
    user_prompt_preview,
)
from phi.agent.deps import (
    Action,
    ActivityLog,
    AgentConfig,
    Approval,
    AuthorLookup,
    Batch,
    Entry,
    NotificationContext,
    PhiDeps,
    PhiPost,
)

__all__ = [
    "CORE_TOOLS",
    "ENTRY_PROMPTS",
    "Action",
    "ActivityLog",
    "AgentConfig",
    "Approval",
    "AuthorLookup",
    "Batch",
    "Entry",
    "NotificationContext",
    "PhiAgent",
    "PhiDeps",
    "PhiPost",
    "PromptCaches",
    "build_agent",
    "build_batch",
    "entry_prompt",
    "run",
    "system_prompt",
    "user_prompt_preview",
]
