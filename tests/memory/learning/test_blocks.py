"""Blocks: the character limit on every write path, versions, attach and detach."""

from __future__ import annotations

import pytest

from phi.errors import InvalidInput
from phi.memory import Memory, NewRow, user_namespace
from phi.memory.learning.blocks import CORE_BLOCKS, Blocks, user_label

pytestmark = pytest.mark.anyio

ALICE = "did:plc:alice"


async def test_operations_and_versions(memory: Memory) -> None:
    blocks = Blocks(memory=memory)
    label = user_label(ALICE)
    assert (await blocks.view(label)).content.startswith("# User: did:plc:alice")
    assert (await blocks.view(label)).version == 0
    await blocks.set(label, "likes crows")
    await blocks.append(label, "lives near the sea")
    after = await blocks.replace(label, "crows", "ravens")
    assert (after.content, after.version) == ("likes ravens\nlives near the sea", 3)
    assert (await blocks.view(label)).content == after.content
    assert await blocks.labels() == [*CORE_BLOCKS, label]


async def test_limit_holds_on_every_operation(memory: Memory) -> None:
    blocks = Blocks(memory=memory, limit=20)
    await blocks.set("persona", "x" * 20)  # exactly at the limit is fine
    with pytest.raises(InvalidInput, match=r"would hold 21 characters, over its limit of 20"):
        await blocks.set("persona", "y" * 21)
    with pytest.raises(InvalidInput, match="over its limit"):
        await blocks.append("persona", "z")
    with pytest.raises(InvalidInput, match="over its limit"):
        await blocks.replace("persona", "x", "xx")
    with pytest.raises(InvalidInput, match="over its limit"):
        await blocks.set("zeitgeist", "y" * 21, dry_run=True)
    assert (await blocks.view("persona")).content == "x" * 20
    assert (await blocks.view("persona")).version == 1


async def test_default_limit_is_5000(memory: Memory) -> None:
    blocks = Blocks(memory=memory)
    await blocks.set("humans", "h" * 5000)
    with pytest.raises(InvalidInput):
        await blocks.append("humans", "!")


async def test_bad_labels_and_replacements_are_refused(memory: Memory) -> None:
    blocks = Blocks(memory=memory)
    with pytest.raises(InvalidInput, match="unknown block 'secrets'"):
        await blocks.view("secrets")
    with pytest.raises(InvalidInput, match="not a DID"):
        await blocks.view("user:alice")
    with pytest.raises(InvalidInput, match="does not contain 'ghost'"):
        await blocks.replace("persona", "ghost", "x")


async def test_dry_run_writes_nothing(memory: Memory) -> None:
    blocks = Blocks(memory=memory)
    shown = await blocks.set("zeitgeist", "everyone talks about crows", dry_run=True)
    assert shown.content == "everyone talks about crows"
    assert (await blocks.view("zeitgeist")).version == 0


async def test_attach_detaches_after_the_run(memory: Memory) -> None:
    blocks = Blocks(memory=memory)
    async with blocks.attach([ALICE]) as run:
        assert blocks.attached == {*CORE_BLOCKS, user_label(ALICE)}
        text = await run.render()
        assert "[BLOCK user:did:plc:alice — " in text and "No information" in text
    assert blocks.attached == frozenset()
    assert (await blocks.view(user_label(ALICE))).version == 1  # created on first attach


async def test_detach_happens_after_an_exception(memory: Memory) -> None:
    blocks = Blocks(memory=memory)

    class Boom(Exception):
        pass

    seen: list[frozenset[str]] = []

    async def run() -> None:
        async with blocks.attach([ALICE, "did:plc:bob"]):
            seen.append(blocks.attached)
            raise Boom

    with pytest.raises(Boom):
        await run()
    assert user_label("did:plc:bob") in seen[0]
    assert blocks.attached == frozenset()


async def test_overlapping_runs_keep_their_own_attachments(memory: Memory) -> None:
    blocks = Blocks(memory=memory)
    async with blocks.attach([ALICE]):
        async with blocks.attach(["did:plc:bob"]):
            assert {user_label(ALICE), user_label("did:plc:bob")} <= blocks.attached
        assert user_label("did:plc:bob") not in blocks.attached
        assert user_label(ALICE) in blocks.attached
    assert blocks.attached == frozenset()


async def test_forget_erases_a_persons_block(memory: Memory) -> None:
    blocks = Blocks(memory=memory)
    await blocks.set(user_label(ALICE), "likes crows")
    await blocks.append(user_label(ALICE), "lives by the sea")
    assert await blocks.forget(ALICE) == 2
    assert (await blocks.view(user_label(ALICE))).version == 0
    assert await blocks.labels() == list(CORE_BLOCKS)


async def test_forgetting_a_person_erases_their_block_too(memory: Memory) -> None:
    blocks = Blocks(memory=memory)
    await blocks.set("user:did:plc:alice", "calls herself nate")
    await memory.remember(
        NewRow(content="alice likes tea", namespace=user_namespace("did:plc:alice"))
    )
    report = await memory.forget(user_namespace("did:plc:alice"))
    assert report.rows == 1 and report.kinds["user block versions"] == 1
    assert "nate" not in (await blocks.view("user:did:plc:alice")).content
    await blocks.set("user:did:plc:bob", "only a block, no rows")
    only_block = await memory.forget(user_namespace("did:plc:bob"))
    assert (only_block.rows, dict(only_block.kinds)) == (0, {"user block versions": 1})
