"""The `session_start` prompt and the `phi://preload/…` resource: a new session's first call,
on an empty store and under `--namespace-prefix`, and confinement of `person=` and links."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from mcp import Client
from phi.cli import app
from phi.errors import InvalidInput
from phi.mcp import McpOptions, build_server
from phi.memory import Memory, NewRow, user_namespace

from .test_server import call, error

pytestmark = pytest.mark.anyio

THREAD = "at://did:plc:ann/app.bsky.feed.post/3kcello"
OUTSIDE = "outside this server's prefix 'alice-'"


async def prompt_text(client: Client, **arguments: str) -> str:
    prompt = await client.get_prompt("session_start", arguments)
    return prompt.messages[0].content.text  # type: ignore[union-attr]


async def resource_text(client: Client, namespace: str) -> str:
    resource = await client.read_resource(f"phi://preload/{namespace}")
    return resource.contents[0].text  # type: ignore[union-attr]


async def test_a_new_session_on_an_empty_store_hears_no_memory_yet(memory: Memory) -> None:
    async with Client(build_server(memory)) as client:
        assert "no memory yet" in await prompt_text(client)
        assert "no memory yet" in await prompt_text(client, namespace="agent-notes")
        assert "no memory yet" in await resource_text(client, "agent-notes")
    async with Client(build_server(memory, McpOptions(namespace_prefix="alice-"))) as alice:
        assert "no memory yet" in await prompt_text(alice)
        assert "no memory yet" in await resource_text(alice, "alice-notes")
    assert (await memory.stats()).rows == 0


async def test_session_start_under_a_prefix_sees_only_its_namespaces(memory: Memory) -> None:
    await memory.remember(
        NewRow(content="Bob's secret plan is to learn the cello", namespace="bob-notes")
    )
    await memory.remember(
        NewRow(content="Alice plays the cello on Sundays", namespace="alice-notes")
    )
    async with Client(build_server(memory, McpOptions(namespace_prefix="alice-"))) as alice:
        text = await prompt_text(alice, hint="cello")
        assert "Alice plays the cello" in text
        assert "Bob" not in text
        assert "Alice plays the cello" in await resource_text(alice, "alice-notes")
        with pytest.raises(MCPError) as refused:
            await alice.get_prompt("session_start", {"namespace": "bob-notes"})
        assert OUTSIDE in str(refused.value)
        with pytest.raises(MCPError) as refused:
            await alice.read_resource("phi://preload/bob-notes")
        assert OUTSIDE in str(refused.value)


async def test_person_under_a_prefix(memory: Memory) -> None:
    ann = user_namespace("did:plc:ann")
    await memory.remember(NewRow(content="Ann likes climbing", namespace=ann, kind="observation"))
    async with Client(build_server(memory, McpOptions(namespace_prefix="alice-"))) as alice:
        assert OUTSIDE in await error(alice, "recall", query="climbing", person="did:plc:ann")
        assert OUTSIDE in await error(alice, "preload", hint="climbing", person="did:plc:ann")
    users = McpOptions(namespace_prefix="phi-users-")
    async with Client(build_server(memory, users)) as people:
        found = await call(people, "recall", query="climbing", person="did:plc:ann")
        assert [hit["namespace"] for hit in found["results"]] == [ann]
        window = await call(people, "preload", hint="climbing", person="did:plc:ann")
        assert "Ann likes climbing" in window["text"]
        assert "not a DID" in await error(people, "recall", query="x", person="did:plc:ann\n")


async def test_links_from_an_in_prefix_row_never_reach_outside_it(memory: Memory) -> None:
    theirs = await memory.remember(
        NewRow(content="Bob's cello lesson notes", namespace="bob-notes", source_uris=[THREAD])
    )
    mine = await memory.remember(
        NewRow(content="Alice's cello lesson notes", namespace="alice-notes", source_uris=[THREAD])
    )
    # The shared source links the two rows across namespaces in the store itself, so the
    # assertions below test the confinement, not the absence of a link.
    linked = await memory.store.edges([mine.row_id], types=None)
    assert theirs.row_id in {edge.other(mine.row_id) for edge in linked}
    async with Client(build_server(memory, McpOptions(namespace_prefix="alice-"))) as alice:
        found = await call(alice, "neighbors", row_id=mine.row_id)
        assert theirs.row_id not in str(found)
        recalled = await call(alice, "recall", query="Bob's cello lesson notes")
        assert {hit["namespace"] for hit in recalled["results"]} == {"alice-notes"}
        window = await call(alice, "preload", hint="cello lesson")
        assert mine.row_id in window["text"]
        assert theirs.row_id not in window["text"]
        assert "Bob's cello" not in await prompt_text(alice, hint="cello lesson")
        assert "no memory row" in await error(alice, "neighbors", row_id=theirs.row_id)


def test_an_empty_prefix_is_refused() -> None:
    with pytest.raises(InvalidInput, match="namespace prefix"):
        McpOptions(namespace_prefix="")
    with pytest.raises(InvalidInput, match="namespace prefix"):
        McpOptions(namespace_prefix="alice-\n")


def test_the_cli_refuses_an_empty_prefix(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    result = CliRunner().invoke(app, ["mcp", "--namespace-prefix", "", "--db", str(db)])
    assert result.exit_code == 2, result.output
    assert "namespace prefix" in result.output
    assert "Traceback" not in result.output
    assert not db.exists()
