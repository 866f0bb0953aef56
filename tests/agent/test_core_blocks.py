"""Core blocks reach the prompt with their limits, and phi edits them through its tools:
`zeitgeist` and `humans` freely, `persona` only with the owner's like (the owner gate)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic_ai import ModelRetry

from phi.agent import Action, Approval, PhiDeps
from phi.agent.outcomes import Refused
from phi.agent.prompt.core_blocks import core_blocks_block
from phi.agent.tools.blocks import core_block_append, core_block_replace, core_block_view
from phi.memory import Memory
from phi.memory.learning import Blocks

from ._network import FakeClient, run_context
from .test_gate_logic import OWNER, deps, notification

pytestmark = pytest.mark.anyio

OWNER_DID = "did:plc:phioperator"
LIMIT = 200


def with_memory(memory: Memory, d: PhiDeps) -> PhiDeps:
    d.memory = memory
    d.blocks = Blocks(memory=memory, limit=LIMIT)
    d.client = cast(Any, FakeClient(handles={OWNER: OWNER_DID}))
    return d


def owner_batch(memory: Memory, approvals: list[Approval] | None = None) -> PhiDeps:
    return with_memory(memory, deps(notification(OWNER), approvals=approvals))


async def test_the_prompt_shows_each_core_block_with_its_limit(memory: Memory) -> None:
    d = owner_batch(memory)
    await d.blocks.set("zeitgeist", "everyone is talking about the eclipse")
    assert await core_blocks_block(d) == (
        f"[CORE BLOCK persona — who you are; changing it needs your owner's approval; "
        f"0/{LIMIT} chars]\n(empty)\n\n"
        f"[CORE BLOCK zeitgeist — what is going on around you; 37/{LIMIT} chars]\n"
        "everyone is talking about the eclipse\n\n"
        f"[CORE BLOCK humans — the people you know, in general; 0/{LIMIT} chars]\n(empty)"
    )


async def test_zeitgeist_and_humans_change_without_asking(memory: Memory) -> None:
    d = with_memory(memory, deps(notification("alice.test")))
    ctx = run_context(d)
    assert await core_block_append(ctx, "zeitgeist", "an eclipse on friday") == (
        f"appended to zeitgeist (20/{LIMIT} chars)"
    )
    assert await core_block_replace(ctx, "zeitgeist", "friday", "saturday") == (
        f"replaced in zeitgeist (22/{LIMIT} chars)"
    )
    await core_block_append(ctx, "humans", "most people here are night owls")
    assert (await d.blocks.view("zeitgeist")).content == "an eclipse on saturday"
    assert str(await core_block_view(ctx, "humans")).endswith("most people here are night owls")
    assert cast(FakeClient, d.client).posts == []  # nobody was asked


async def test_persona_changes_only_with_the_owners_like(memory: Memory) -> None:
    d = owner_batch(memory)
    ctx = run_context(d)
    asked = await core_block_append(ctx, "persona", "i speak in lowercase")
    assert isinstance(asked, str) and asked.startswith("not approved yet")
    (request, _), *_ = cast(FakeClient, d.client).posts
    assert "core_block_append(label='persona', text='i speak in lowercase')" in request
    assert (await d.blocks.view("persona")).version == 0

    action = Action.of("core_block_append", label="persona", text="i speak in lowercase")
    liked = Approval(
        action=action, request_uri="at://phi/req", thread_root="at://root", owner_did=OWNER_DID
    )
    d = owner_batch(memory, approvals=[liked])
    assert await core_block_append(run_context(d), "persona", "i speak in lowercase") == (
        f"appended to persona (20/{LIMIT} chars)"
    )
    assert (await d.blocks.view("persona")).content == "i speak in lowercase"
    assert d.batch is not None and d.batch.approvals == []  # spent


async def test_a_stranger_in_the_batch_blocks_a_persona_change(memory: Memory) -> None:
    d = with_memory(memory, deps(notification(OWNER), notification("alice.test")))
    refused = await core_block_append(run_context(d), "persona", "i love herons")
    assert isinstance(refused, Refused) and "@alice.test" in refused.refused
    assert cast(FakeClient, d.client).posts == []
    assert (await d.blocks.view("persona")).version == 0


async def test_an_impossible_persona_edit_asks_nobody(memory: Memory) -> None:
    d = owner_batch(memory)
    with pytest.raises(ModelRetry, match=f"over its limit of {LIMIT}"):
        await core_block_append(run_context(d), "persona", "x" * (LIMIT + 1))
    with pytest.raises(ModelRetry, match="does not contain 'nothing'"):
        await core_block_replace(run_context(d), "persona", "nothing", "y")
    assert cast(FakeClient, d.client).posts == []
