"""phi running on the session's local network with a scripted brain."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from pathlib import Path

import pytest
from pydantic_ai import models
from pydantic_ai.models import Model

from phi.agent import AgentConfig, build_agent
from phi.agent.prompt import PromptProfile
from phi.atproto import (
    CosmikCard,
    CosmikConnection,
    Goal,
    MentionConsent,
    Observation,
    PhiClient,
    PhiRecord,
)
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.memory import Memory, MiniLMEmbedder
from phi.memory.model import utc_now
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Schedule, ScheduleConfig
from phi.runtime.timing import TimedModel

from ._brain import Brain

models.ALLOW_MODEL_REQUESTS = False

OWNER = "phi-operator.test"

RuntimeFactory = Callable[..., AbstractAsyncContextManager[PhiRuntime]]


@pytest.fixture
def runtime(
    cast: SandboxInfo, sandbox: Sandbox, minilm: MiniLMEmbedder, tmp_path: Path
) -> RuntimeFactory:
    """Opens phi logged in on the test network with a brain (a scripted `Brain`, or any
    model), its own memory file, and no scheduled jobs unless given."""

    @asynccontextmanager
    async def open_runtime(
        brain: Brain | Model,
        *,
        tools: Sequence[str] | None = None,
        profile: PromptProfile = "full",
        schedule: ScheduleConfig | None = None,
        clock: Callable[[], datetime] = utc_now,
    ) -> AsyncIterator[PhiRuntime]:
        config = AgentConfig(owner_handle=OWNER)
        timed = TimedModel(brain.model() if isinstance(brain, Brain) else brain)
        agent = build_agent(timed, config, tools=tools, profile=profile)
        async with (
            PhiClient(cast.client_config("phi")) as client,
            Memory.open(tmp_path / "memory.db", embedder=minilm) as memory,
        ):
            yield PhiRuntime(
                client=client,
                memory=memory,
                agent=agent,
                config=config,
                admission=Admission(self_did=client.me.did),
                schedule=Schedule(
                    schedule or ScheduleConfig(musing_hours=frozenset(), reflection_hour=None),
                    started_at=clock(),
                ),
                clock=clock,
                model_timer=timed,
            )

    return open_runtime


PHI_RECORDS: tuple[type[PhiRecord], ...] = (
    Goal,
    Observation,
    MentionConsent,
    CosmikCard,
    CosmikConnection,
)


async def _clear_records(phi: PhiClient) -> None:
    for kind in PHI_RECORDS:
        for stored in await phi.list_records(kind, limit=100):
            await phi.delete_record(kind, stored.rkey)


@pytest.fixture
async def quiet(phi: PhiClient, sandbox: Sandbox) -> AsyncIterator[None]:
    """Start from no unread notifications and none of phi's own records, and leave none of
    those records behind (the network is shared by the whole session)."""
    await sandbox.wait_for_indexing()
    await phi.update_seen()
    await _clear_records(phi)
    yield
    await _clear_records(phi)
