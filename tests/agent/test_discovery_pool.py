"""[DISCOVERY POOL] on the local network: the owner likes a stranger's posts, and the block
names the stranger with a post the owner liked; people phi already talked to, phi itself and
the owner stay out."""

from __future__ import annotations

import pytest

from phi.agent import AgentConfig, PhiDeps, PromptCaches
from phi.agent.prompt.discovery import discovery_block
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox
from phi.memory import Memory, NewRow, user_namespace
from phi.memory.learning import Blocks

from .conftest import OWNER

pytestmark = pytest.mark.anyio


async def test_the_owner_liking_a_strangers_posts_puts_them_in_the_pool(
    sandbox: Sandbox,
    phi: PhiClient,
    operator: PhiClient,
    alice: PhiClient,
    bob: PhiClient,
    memory: Memory,
) -> None:
    herons = await alice.post("three herons on the weir at dawn")
    kites = await alice.post("kite season again")
    bobs = await bob.post("bob's post the owner likes too")
    phis = await phi.post("phi's own post, liked by its owner")
    await sandbox.wait_for_indexing()
    for refs in (herons, kites, bobs, phis):
        await operator.like(refs[0])
    await operator.like((await operator.post("the owner's own post"))[0])
    await sandbox.wait_for_indexing()
    # phi has talked to bob: he is no stranger.
    await memory.remember(
        NewRow(
            content="bob said he flies kites",
            namespace=user_namespace(bob.me.did),
            kind="observation",
        )
    )

    d = PhiDeps(
        client=phi,
        memory=memory,
        blocks=Blocks(memory=memory),
        small=None,
        config=AgentConfig(owner_handle=OWNER),
        caches=PromptCaches(),
    )
    block = await discovery_block(d)
    lines = block.splitlines()
    assert lines[0] == (
        f"[DISCOVERY POOL — people @{OWNER} has been liking lately; you never talked]"
    )
    (alice_line,) = [line for line in lines if alice.me.did in line]
    # The newest like is the sample; her count covers both liked posts.
    assert alice_line == f'- @{alice.me.handle} ({alice.me.did}), 2 liked: "kite season again"'
    for absent in (bob.me.did, phi.me.did, operator.me.did):
        assert absent not in block

    # Cached: a new like shows only once the cache time has passed.
    await operator.like((await alice.post("a third one"))[0])
    await sandbox.wait_for_indexing()
    assert await discovery_block(d) == block
    d.caches.invalidate("discovery")
    assert f'({alice.me.did}), 3 liked: "a third one"' in await discovery_block(d)
