"""The per-person block tools over a real memory store: they write only the blocks of the
batch's people, keep each block within its limit, and send a fixable mistake back to the
model as a retry."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import RetryPromptPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.agent import AgentConfig, PhiDeps
from phi.agent.core import run, toolset_for
from phi.agent.outcomes import Refused
from phi.agent.tools.memory import (
    user_block_append,
    user_block_replace,
    user_block_set,
    user_block_view,
)
from phi.memory import Memory
from phi.memory.learning import Blocks, user_label

from ._network import FakeClient, run_context
from .test_gate_logic import deps, notification

pytestmark = pytest.mark.anyio

ALICE, BOB = notification("alice.test"), notification("bob.test")
LIMIT = 120


def alice_batch(memory: Memory) -> PhiDeps:
    d = deps(ALICE)
    d.memory = memory
    d.blocks = Blocks(memory=memory, limit=LIMIT)
    d.client = cast(Any, FakeClient(handles={"bob.test": BOB.author_did}))
    return d


async def content(d: PhiDeps, did: str) -> str:
    return (await d.blocks.view(user_label(did))).content


async def test_append_replace_and_set_write_the_block_of_someone_in_the_batch(
    memory: Memory,
) -> None:
    d = alice_batch(memory)
    ctx = run_context(d)
    async with d.blocks.attach([ALICE.author_did]):
        await user_block_set(ctx, "alice.test", "likes herons")
        assert str(await user_block_append(ctx, "@alice.test", "lives by a lake")).startswith(
            "appended ("
        )
        assert await user_block_replace(ctx, "alice.test", "herons", "egrets") == (
            f"replaced (28/{LIMIT} chars)"
        )
        assert await content(d, ALICE.author_did) == "likes egrets\nlives by a lake"
        view = await user_block_view(ctx, "alice.test")
        assert str(view).endswith("likes egrets\nlives by a lake")
    assert d.activity.actions == [
        "block @alice.test: rewritten",
        "block @alice.test: appended 'lives by a lake'",
        "block @alice.test: replaced 'herons'",
    ]


async def test_someone_outside_the_batch_is_refused_and_their_block_untouched(
    memory: Memory,
) -> None:
    d = alice_batch(memory)
    ctx = run_context(d)
    before = await content(d, BOB.author_did)
    async with d.blocks.attach([ALICE.author_did]):
        answers = [
            await user_block_view(ctx, "bob.test"),
            await user_block_append(ctx, "bob.test", "owes me money"),
            await user_block_replace(ctx, "bob.test", "x", "y"),
            await user_block_set(ctx, "bob.test", "owes me money"),
        ]
    assert (
        answers
        == [Refused(refused="@bob.test's block is not open in this run; only people in this batch")]
        * 4
    )
    assert await content(d, BOB.author_did) == before
    assert (await d.blocks.view(user_label(BOB.author_did))).version == 0


async def test_a_block_is_refused_again_once_the_run_has_ended(memory: Memory) -> None:
    d = alice_batch(memory)
    async with d.blocks.attach([ALICE.author_did]):
        pass
    assert isinstance(await user_block_set(run_context(d), "alice.test", "x"), Refused)


async def test_a_write_over_the_limit_is_sent_back_and_the_model_shortens_it(
    memory: Memory,
) -> None:
    """Through a real agent run: the over-long write comes back as a retry naming the limit,
    the block is unchanged, and the shorter write that follows lands."""
    d = alice_batch(memory)
    seen: list[str] = []

    async def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        del info
        last = messages[-1].parts
        seen.extend(p.model_response() for p in last if isinstance(p, RetryPromptPart))
        seen.extend(str(p.content) for p in last if isinstance(p, ToolReturnPart))
        text = "x" * (LIMIT + 1) if len(seen) == 0 else "short and true"
        if len(seen) == 2:
            return ModelResponse(parts=[TextPart("done")])
        args = {"handle": "alice.test", "content": text}
        return ModelResponse(parts=[ToolCallPart(tool_name="user_block_set", args=args)])

    agent = Agent(
        FunctionModel(brain),
        deps_type=PhiDeps,
        toolsets=[toolset_for(AgentConfig(), only=frozenset({"user_block_set"}))],
    )
    await run(cast(Any, agent), d)
    assert f"over its limit of {LIMIT}" in seen[0]
    assert seen[1] == f"set (14/{LIMIT} chars)"
    assert await content(d, ALICE.author_did) == "short and true"
    assert "user_block_set(handle='alice.test'" in d.activity.actions[0]
    assert "asked again" in d.activity.actions[0]
