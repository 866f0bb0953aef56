"""The recall tool over a real memory store: one person only, or phi's own notes."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel

from phi.agent import PhiDeps
from phi.agent.tools.memory import recall
from phi.memory import Memory, Turn, user_namespace
from phi.memory.learning import EPISODIC

from .test_gate_logic import deps, notification

pytestmark = pytest.mark.anyio


def context(memory: Memory, *items: Any) -> RunContext[PhiDeps]:
    d = deps(*items)
    d.memory = memory
    return RunContext[PhiDeps](deps=d, model=TestModel(), usage=cast(Any, None))


async def test_recall_about_a_person_reads_only_their_memory(memory: Memory) -> None:
    alice, bob = notification("alice.test"), notification("bob.test")
    for n, text in ((alice, "herons stand so still"), (bob, "herons are my boat's mascot")):
        await memory.record_interaction(
            [Turn(speaker=f"@{n.author_handle}", text=text)],
            namespace=user_namespace(n.author_did),
            author=n.author_did,
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
    await memory.remember("herons nest in colonies", namespace=EPISODIC)
    assert "herons nest in colonies" in await recall(context(memory), "herons")
