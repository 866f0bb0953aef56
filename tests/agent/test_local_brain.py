"""The air-gapped brain on the local network: a mention gets a reply from the real SmolLM2
(run in-process by llama.cpp), through the same poller and tools as any model."""

from __future__ import annotations

import pytest
from pydantic_ai import models

from phi.agent import CORE_TOOLS
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.llm import resolve_model
from phi.memory import user_namespace

from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]


async def test_a_mention_gets_a_reply_from_the_local_model(
    runtime: RuntimeFactory, alice: PhiClient, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(models, "ALLOW_MODEL_REQUESTS", True)  # local, in-process: no network
    (question,) = await alice.post("@phi.test hello phi! what is your favourite bird?")
    await sandbox.wait_for_indexing()
    async with runtime(resolve_model(None), tools=sorted(CORE_TOOLS)) as phi_runtime:
        report = await phi_runtime.tick()
        await sandbox.wait_for_indexing()
        replies = [r for r in report.replies if r.in_reply_to == question.uri]
        assert replies, f"no reply; phi did {report.actions}, then said {report.output!r}"
        thread = await alice.get_thread(question.uri)
        answer = next(p for p in thread.posts if p.uri == replies[0].uri)
        assert answer.author_handle == "phi.test" and answer.text.strip()
        stored = await phi_runtime.memory.recent(namespace=user_namespace(alice.me.did))
        assert [row.kind for row in stored] == ["interaction"]
        assert report.model_seconds > 0  # the local model's time is measured apart
