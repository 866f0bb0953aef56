"""The small-model profile takes one action a run: after its reply, the run ends without
asking the model again (each extra decision costs a tiny model seconds)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from phi.agent import CORE_TOOLS
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.llm import ChatRequest, GrammarToolModel

from .conftest import RuntimeFactory

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("quiet")]


async def test_after_its_reply_the_tiny_brain_is_not_asked_again(
    runtime: RuntimeFactory, alice: PhiClient, sandbox: Sandbox
) -> None:
    requests: list[ChatRequest] = []

    async def complete(request: ChatRequest) -> Mapping[str, Any]:
        requests.append(request)
        schema = request["response_format"]["json_schema"]["schema"]
        branches = schema.get("anyOf", [schema])
        reply = next(b for b in branches if b["properties"]["tool"].get("const") == "reply_to")
        (uri,) = reply["properties"]["arguments"]["properties"]["uri"]["enum"][-1:]
        answer = {"tool": "reply_to", "arguments": {"uri": uri, "text": "hi alice, welcome!"}}
        return {
            "choices": [{"message": {"content": json.dumps(answer)}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }

    (question,) = await alice.post("@phi.test hello phi! do you like herons?")
    await sandbox.wait_for_indexing()
    model = GrammarToolModel(complete, model_name="scripted", calls_per_run=1)
    async with runtime(model, tools=sorted(CORE_TOOLS), profile="compact") as phi_runtime:
        report = await phi_runtime.tick()
    assert [r.in_reply_to for r in report.replies] == [question.uri]
    assert len(requests) == 1, [r["messages"][-1]["content"][:200] for r in requests]
