"""[RELEVANT MEMORIES — synthesized] is written with phi's goals in view: the synthesis the
agent asks for receives them (it used to get none)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.messages import ModelRequest, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.agent.prompt.people import episodic_block
from phi.atproto import Goal, StoredRecord
from phi.memory import Memory, NewRow
from phi.memory.learning import EPISODIC, Blocks, SmallModel

from ._quiet import QuietClient
from .test_gate_logic import deps, notification

pytestmark = pytest.mark.anyio

GOALS = [
    Goal(title="make 3 friends", description="real conversations", progress_signal="replies"),
    Goal(title="learn birds", description="herons first", progress_signal="notes"),
]


async def test_the_synthesis_is_asked_with_the_goals(memory: Memory) -> None:
    await memory.remember(
        NewRow(content="alice showed me a heron nest by the lake", namespace=EPISODIC)
    )
    prompts: list[str] = []

    async def small(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        prompts.extend(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        tool = info.output_tools[0].name
        args = {"block": "- alice knows where herons nest", "stale": []}
        return ModelResponse(parts=[ToolCallPart(tool_name=tool, args=args)])

    d = deps(notification("alice.test"))
    d.memory, d.blocks = memory, Blocks(memory=memory)
    d.small = SmallModel(model=FunctionModel(small), memory=memory)
    # Listed newest first, as the PDS lists them.
    stored = [
        StoredRecord(uri=f"at://did:plc:phi/io.phi.goal/{i}", cid=None, value=g)
        for i, g in reversed(list(enumerate(GOALS)))
    ]
    d.client = cast(Any, QuietClient(goals=stored))

    block = await episodic_block(d)
    assert block == "[RELEVANT MEMORIES — synthesized]\n- alice knows where herons nest"
    (prompt,) = prompts
    assert "GOALS:\n- make 3 friends: real conversations\n- learn birds: herons first\n" in prompt
