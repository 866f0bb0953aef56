"""The per-author memory blocks of a prompt: one person's four kinds of memory, found with
their batch text embedded once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from phi.agent.prompt.people import people_blocks
from phi.memory import Embedder, Memory, NewRow, Turn, user_namespace
from phi.memory.embed import Vectors
from phi.memory.learning import Blocks

from .test_gate_logic import deps, notification

pytestmark = pytest.mark.anyio


@dataclass
class CountingEmbedder:
    """The real embedder, noting every text it is asked to embed."""

    inner: Embedder
    texts: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return await self.inner.embed(texts)


async def test_each_author_query_is_embedded_once(memory: Memory) -> None:
    alice, bob = notification("alice.test"), notification("bob.test")
    for n in (alice, bob):
        ns, did = user_namespace(n.author_did), n.author_did
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker=f"@{n.author_handle}", text="herons stand so still")],
                namespace=ns,
                author=did,
            )
        )
        await memory.remember(
            NewRow(content=f"{n.author_handle} likes herons", namespace=ns, kind="observation")
        )
    counting = CountingEmbedder(memory.embedder)
    memory.embedder = counting
    d = deps(alice, bob)
    d.memory, d.blocks = memory, Blocks(memory=memory)
    text = await people_blocks(d)
    assert "alice.test likes herons" in text and "bob.test likes herons" in text
    assert "PAST EXCHANGES WITH @alice.test" in text
    assert sorted(counting.texts) == sorted([alice.text, bob.text])
