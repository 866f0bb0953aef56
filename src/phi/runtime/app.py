"""Assembling a running phi from settings: the client, memory, the brain, the agent, the loop.

`phi run` (a real account) and `phi sandbox run` (the local network) both come through
`open_runtime`; they differ only in the account they log in to.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final

from phi.agent import CORE_TOOLS, AgentConfig, build_agent
from phi.agent.control_log import CONTROL_LOG
from phi.agent.mcp_config import load_mcp_servers
from phi.agent.search import WebSearch
from phi.atproto import ClientConfig, PhiClient
from phi.config import Settings
from phi.llm import describe_brain, is_local, resolve_model, uses_grammar
from phi.memory import Memory
from phi.memory.learning import SmallModel
from phi.memory.model import utc_now
from phi.runtime.journal import RunJournal
from phi.runtime.pending import Backoff
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Schedule, ScheduleConfig
from phi.runtime.timing import TimedModel

__all__ = ["Brains", "agent_config", "choose_brains", "open_runtime"]

logger = logging.getLogger("phi.runtime")


@dataclass(frozen=True, kw_only=True)
class Brains:
    """Which models phi thinks with, described for the startup banner."""

    agent: str
    """One line naming the agent's model (and saying when it is the tiny local one)."""
    memory: str
    """The same for memory's small passes."""
    tiny: bool
    """The agent runs on a small model through the grammar adapter (the air-gapped one, or
    a `grammar:` server): it gets only the core tools and the compact prompt."""
    learns: bool = True
    """Whether memory's small passes (extraction, review, summaries) run at all."""

    def memory_line(self) -> str | None:
        """The startup line about memory's passes, when it says more than `agent` does."""
        if not self.learns:
            return MEMORY_PASSES_OFF
        return f"memory passes: {self.memory}" if self.memory != self.agent else None


MEMORY_PASSES_OFF: Final = (
    "memory passes: off on the tiny local model (it answers no extraction usably: 0 facts "
    "from 8 LoCoMo exchanges); phi still keeps every exchange verbatim and recalls it. Set "
    "PHI_MEMORY_MODEL to a real model to learn facts, or PHI_MEMORY_MODEL=local to try anyway"
)


def choose_brains(settings: Settings) -> Brains:
    """The brains `settings` choose. Memory's passes are off when they would fall to the
    tiny local model by default (`PHI_MEMORY_MODEL` unset): it cannot do them (see
    `MEMORY_PASSES_OFF`); setting `PHI_MEMORY_MODEL=local` turns them on anyway."""
    memory_spec = settings.memory_model or settings.model
    return Brains(
        learns=not (settings.memory_model is None and is_local(settings.model)),
        agent=describe_brain(settings.model),
        memory=describe_brain(memory_spec),
        tiny=uses_grammar(settings.model),
    )


def agent_config(settings: Settings) -> AgentConfig:
    return AgentConfig(
        nsid_prefix=settings.nsid_prefix,
        owner_handle=settings.owner_handle,
        personality_file=settings.personality_file,
        web_search=WebSearch.from_settings(settings),
        card_search_url=settings.card_search_url,
        synthesize=not is_local(settings.memory_model or settings.model),
        mcp_servers=load_mcp_servers(settings.mcp_servers) if settings.mcp_servers else (),
        services=tuple(settings.health_urls),
        control_log=settings.home / CONTROL_LOG,
        recent_conversations=settings.recent_conversations,
        recent_conversation_chars=settings.recent_conversation_chars,
        unshown_people=tuple(settings.deny_handles),
        vision=settings.model_vision,
        image_max_bytes=settings.image_max_bytes,
        images_per_batch=settings.images_per_batch,
    )


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    client_config: ClientConfig,
    *,
    emit: Callable[[str], None] | None = None,
) -> AsyncIterator[PhiRuntime]:
    """phi logged in with `client_config`, its memory open, its brain chosen (the local
    model loads on its first request), not yet ticking."""
    brains = choose_brains(settings)
    config = agent_config(settings)
    model = resolve_model(settings.model)
    memory_model = resolve_model(settings.memory_model or settings.model)
    timed = TimedModel(model, request_timeout=settings.model_timeout)
    agent = (
        build_agent(timed, config, tools=sorted(CORE_TOOLS), profile="compact")
        if brains.tiny
        else build_agent(timed, config)
    )
    # Entering the agent keeps its MCP servers' sessions open for the process, not per run.
    async with (
        agent,
        PhiClient(client_config) as client,
        Memory.open(
            settings.resolved_memory_url(),
            embedder=settings.make_embedder(),
            auto_upgrade=settings.auto_upgrade,
            pool_max=settings.postgres_pool_max,
        ) as memory,
    ):
        runtime = PhiRuntime(
            client=client,
            memory=memory,
            agent=agent,
            config=config,
            admission=Admission.from_settings(settings, self_did=client.me.did),
            schedule=Schedule(ScheduleConfig.from_settings(settings), started_at=utc_now()),
            small=SmallModel(model=memory_model, memory=memory) if brains.learns else None,
            poll_seconds=settings.poll_seconds,
            emit=emit,
            model_timer=timed,
            journal=RunJournal.at_home(settings.home),
            backoff=Backoff.from_settings(settings),
        )
        yield runtime
