"""The recall tool over a real memory store: one person only, or phi's own notes."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel

from phi.agent import PhiDeps
from phi.agent.outcomes import Refused
from phi.agent.tools.memory import recall
from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.learning import EPISODIC

from ._network import FakeClient
from .test_gate_logic import OWNER, deps, notification

pytestmark = pytest.mark.anyio


def context(memory: Memory, *items: Any) -> RunContext[PhiDeps]:
    d = deps(*items)
    d.memory = memory
    return RunContext[PhiDeps](deps=d, model=TestModel(), usage=cast(Any, None))


async def test_recall_about_a_person_reads_only_their_memory(memory: Memory) -> None:
    alice, bob = notification("alice.test"), notification("bob.test")
    for n, text in ((alice, "herons stand so still"), (bob, "herons are my boat's mascot")):
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker=f"@{n.author_handle}", text=text)],
                namespace=user_namespace(n.author_did),
                author=n.author_did,
            )
        )
    found = await recall(context(memory, alice, bob), "herons", about="alice.test")
    assert "herons stand so still" in found
    assert "mascot" not in found


async def test_recall_says_when_there_is_nothing_yet(memory: Memory) -> None:
    alice = notification("alice.test")
    assert await recall(context(memory, alice), "herons", about="alice.test") == (
        "no memories of @alice.test yet"
    )
    assert await recall(context(memory), "herons") == "no notes of your own yet"
    await memory.remember(NewRow(content="herons nest in colonies", namespace=EPISODIC))
    assert "herons nest in colonies" in await recall(context(memory), "herons")


async def test_recall_about_someone_outside_the_batch_is_refused(memory: Memory) -> None:
    """Alice is in the batch and asks about Bob: none of Bob's memory comes back."""
    alice, bob = notification("alice.test"), notification("bob.test")
    await memory.remember(
        NewRow.interaction(
            [Turn(speaker="@bob.test", text="my heron is named Gerald, keep it secret")],
            namespace=user_namespace(bob.author_did),
            author=bob.author_did,
        )
    )
    ctx = context(memory, alice)
    ctx.deps.client = cast(Any, FakeClient(handles={"bob.test": bob.author_did}))
    for about in ("bob.test", "@Bob.test", bob.author_did):
        found = await recall(ctx, "heron", about=about)
        assert "Gerald" not in str(found)
        assert isinstance(found, Refused)
        assert "only people in this batch" in found.refused


async def test_recall_about_the_owner_or_phi_itself_is_allowed(memory: Memory) -> None:
    owner = notification(OWNER)
    await memory.remember(
        NewRow.interaction(
            [Turn(speaker=f"@{OWNER}", text="I keep bees on the roof")],
            namespace=user_namespace(owner.author_did),
            author=owner.author_did,
        )
    )
    await memory.remember(NewRow(content="bees dance to give directions", namespace=EPISODIC))
    ctx = context(memory, notification("alice.test"))
    ctx.deps.client = cast(Any, FakeClient(handles={OWNER: owner.author_did}))
    for about in (OWNER, owner.author_did):
        assert "bees on the roof" in str(await recall(ctx, "bees", about=about))
    assert "give directions" in str(await recall(ctx, "bees", about="phi.test"))
    assert isinstance(await recall(ctx, "bees", about="did:plc:someone"), Refused)


async def test_recall_tells_the_model_when_memories_wait_for_their_vector(
    memory: Memory,
) -> None:
    """A memory not embedded yet is not taken for one never made: the model is told, in
    one line, and told that its words still find it."""
    alice = notification("alice.test")
    namespace = user_namespace(alice.author_did)
    await memory.remember_many(
        [
            NewRow(content="alice's heron is called Gerald", namespace=namespace),
            NewRow(content="alice paints on sundays", namespace=namespace),
        ],
        defer_embedding=True,
    )
    note = (
        "(2 newer memories here are not searchable by meaning yet: if the answer is missing,"
        " ask again with words it would contain)"
    )
    ctx = context(memory, alice)
    by_meaning = await recall(ctx, "what bird does she have?", about="alice.test")
    assert by_meaning == f"nothing relevant in memory\n{note}"
    by_word = str(await recall(ctx, "Gerald", about="alice.test"))
    assert "Gerald" in by_word and by_word.endswith(note)
    await memory.embed_pending()
    found = str(await recall(ctx, "what bird does she have?", about="alice.test"))
    assert "Gerald" in found and "not searchable" not in found
