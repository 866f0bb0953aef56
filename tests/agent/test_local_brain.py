"""The air-gapped brain on the local network: a mention gets a reply from the real SmolLM2
(run in-process by llama.cpp), through the same poller and tools as any model."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic_ai import models

from phi.agent import CORE_TOOLS, AgentConfig, build_agent
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.llm import resolve_model
from phi.memory import Memory, MiniLMEmbedder, user_namespace
from phi.memory.model import utc_now
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Schedule, ScheduleConfig

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]


async def test_a_mention_gets_a_reply_from_the_local_model(
    cast: SandboxInfo,
    sandbox: Sandbox,
    alice: PhiClient,
    minilm: MiniLMEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # local, in-process: no network
    config = AgentConfig(owner_handle="phi-operator.test")
    agent = build_agent(resolve_model(None), config, tools=sorted(CORE_TOOLS))
    (question,) = await alice.post("@phi.test hello phi! what is your favourite bird?")
    await sandbox.wait_for_indexing()
    async with (
        PhiClient(cast.client_config("phi")) as client,
        Memory.open(tmp_path / "memory.db", embedder=minilm) as memory,
    ):
        phi_runtime = PhiRuntime(
            client=client,
            memory=memory,
            agent=agent,
            config=config,
            admission=Admission(self_did=client.me.did),
            schedule=Schedule(
                ScheduleConfig(musing_hours=frozenset(), reflection_hour=None),
                started_at=utc_now(),
            ),
        )
        report = await phi_runtime.tick()
        await sandbox.wait_for_indexing()
        replies = [r for r in report.replies if r.in_reply_to == question.uri]
        assert replies, f"no reply; phi did {report.actions}, then said {report.output!r}"
        thread = await alice.get_thread(question.uri)
        answer = next(p for p in thread.posts if p.uri == replies[0].uri)
        assert answer.author_handle == "phi.test" and answer.text.strip()
        stored = await memory.recent(namespace=user_namespace(alice.me.did))
        assert [row.kind for row in stored] == ["interaction"]
