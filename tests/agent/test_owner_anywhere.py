"""The owner anywhere: [DISCOVERY POOL] reads the owner's likes on the owner's own PDS,
found from their DID document, and says in one line when it cannot.

On the local network the owner is `faraway`, an account on the sandbox's second PDS (the
AppView follows both, as the real one follows a relay): phi's own PDS holds none of their
likes, so reading there would give an empty pool."""

from __future__ import annotations

import socket

import pytest

from phi.agent import AgentConfig, PhiDeps, PromptCaches
from phi.agent.prompt.discovery import discovery_block
from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxInfo
from phi.memory import Memory
from phi.memory.learning import Blocks
from tests._json_server import json_app
from tests._serving import serving

pytestmark = pytest.mark.anyio

HEADER = "[DISCOVERY POOL — people @{owner} has been liking lately; you never talked]"


def deps(phi: PhiClient, memory: Memory, owner: str) -> PhiDeps:
    return PhiDeps(
        client=phi,
        memory=memory,
        blocks=Blocks(memory=memory),
        small=None,
        config=AgentConfig(owner_handle=owner),
        caches=PromptCaches(),
    )


async def test_an_owner_on_another_pds_fills_the_pool(
    sandbox: Sandbox, cast: SandboxInfo, phi: PhiClient, alice: PhiClient, memory: Memory
) -> None:
    (egret,) = await alice.post("an egret, far from home")
    await sandbox.wait_for_indexing()
    async with PhiClient(cast.client_config("faraway")) as faraway:
        await faraway.like(egret)
    await sandbox.wait_for_indexing()

    block = await discovery_block(deps(phi, memory, "faraway.elsewhere"))
    lines = block.splitlines()
    assert lines[0] == HEADER.format(owner="faraway.elsewhere")
    assert f"- @alice.test ({alice.me.did}), " in block
    assert '"an egret, far from home"' in block


async def test_unreadable_likes_are_said_in_one_line(phi: PhiClient, memory: Memory) -> None:
    unknown = "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"
    block = await discovery_block(deps(phi, memory, unknown))
    assert block.splitlines() == [
        HEADER.format(owner=unknown),
        f"(unavailable: cannot read @{unknown}'s likes: cannot find where {unknown!r} lives: "
        f"{phi.config.plc_url}/{unknown} answered HTTP 404)",
    ]


async def test_an_unreachable_pds_is_said_and_a_refusal_keeps_the_servers_words_out(
    phi: PhiClient, memory: Memory
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    seen: list[str] = []
    routes: dict[str, object] = {}
    async with serving(json_app(routes, seen)) as port:
        did = f"did:web:localhost%3A{port}"
        document = {
            "id": did,
            "service": [{"id": "#atproto_pds", "serviceEndpoint": f"http://127.0.0.1:{closed}"}],
        }
        routes["/.well-known/did.json"] = document
        block = await discovery_block(deps(phi, memory, did))
        (_, reason) = block.splitlines()
        assert reason.startswith(
            f"(unavailable: cannot read @{did}'s likes: {did}'s likes on "
            f"http://127.0.0.1:{closed} failed 1 times (ConnectError"
        )

        # A PDS that answers, but refuses: the status is shown, its message is not.
        document["service"] = [
            {"id": "#atproto_pds", "serviceEndpoint": f"http://127.0.0.1:{port}"}
        ]
        routes.pop("/xrpc/com.atproto.repo.listRecords", None)
        block = await discovery_block(deps(phi, memory, did))
        assert block.splitlines()[1] == (
            f"(unavailable: cannot read @{did}'s likes: {did}'s likes on "
            f"http://127.0.0.1:{port} was refused (HTTP 404))"
        )
        assert "NotFound" not in block


async def test_a_did_web_owner_fills_the_pool_from_their_own_server(
    sandbox: Sandbox, phi: PhiClient, bob: PhiClient, memory: Memory
) -> None:
    (boat,) = await bob.post("a boat with a red sail")
    await sandbox.wait_for_indexing()
    seen: list[str] = []
    routes: dict[str, object] = {}
    async with serving(json_app(routes, seen)) as port:
        did = f"did:web:localhost%3A{port}"
        routes["/.well-known/did.json"] = {
            "id": did,
            "service": [{"id": "#atproto_pds", "serviceEndpoint": f"http://127.0.0.1:{port}"}],
        }
        routes["/xrpc/com.atproto.repo.listRecords"] = {
            "records": [{"uri": "at://x", "value": {"subject": {"uri": boat.uri}}}]
        }
        block = await discovery_block(deps(phi, memory, did))
    assert block.splitlines() == [
        HEADER.format(owner=did),
        f'- @bob.test ({bob.me.did}), 1 liked: "a boat with a red sail"',
    ]
