"""The MCP server through the SDK's own client: in process, over stdio and over HTTP."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mcp import Client, StdioServerParameters
from phi.cli import app
from phi.mcp import McpOptions, build_server
from phi.memory import Memory, MiniLMEmbedder, NewRow, user_namespace

from .conftest import PHI

pytestmark = pytest.mark.anyio

NS = "agent-notes"


async def call(client: Client, tool: str, /, **arguments: Any) -> dict[str, Any]:
    """A successful tool call's structured result."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    content: dict[str, Any] = result.structured_content
    return content


async def error(client: Client, tool: str, /, **arguments: Any) -> str:
    """A failed tool call's one-line message."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]


async def round_trip(client: Client, namespace: str) -> None:
    """remember -> recall -> preload -> history, with a supersession in between."""
    old = await call(
        client, "remember", content="Ada's favourite editor is vim", namespace=namespace
    )
    new = await call(
        client,
        "remember",
        content="Ada now prefers helix over vim",
        namespace=namespace,
        supersedes=old["row_id"],
    )
    found = await call(client, "recall", query="which editor does Ada use?", namespaces=[namespace])
    assert [hit["row_id"] for hit in found["results"]] == [new["row_id"]]
    found = await call(
        client, "recall", query="Ada editor", namespaces=[namespace], include_superseded=True
    )
    assert {hit["row_id"] for hit in found["results"]} == {old["row_id"], new["row_id"]}
    window = await call(client, "preload", hint="editor setup", namespaces=[namespace])
    assert "helix" in window["text"]
    assert 0 < window["tokens"] <= 1500
    chain = await call(client, "history", row_id=new["row_id"])
    assert [(row["row_id"], row["status"]) for row in chain["history"]] == [
        (old["row_id"], "superseded"),
        (new["row_id"], "active"),
    ]


async def test_tools_and_round_trip_in_process(memory: Memory) -> None:
    async with Client(build_server(memory)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {
            "remember",
            "recall",
            "preload",
            "neighbors",
            "history",
            "capture",
            "capture_event",
            "link",
            "walk",
        }
        await round_trip(client, NS)
        prompt = await client.get_prompt("session_start", {"hint": "editors", "namespace": NS})
        assert "helix" in prompt.messages[0].content.text  # type: ignore[union-attr]
        resource = await client.read_resource(f"phi://preload/{NS}")
        assert "vim" in resource.contents[0].text  # type: ignore[union-attr]


async def test_history_follows_supersession(memory: Memory) -> None:
    first = await memory.remember(NewRow(content="lives in Lyon", namespace=NS, kind="observation"))
    second = await memory.remember(
        NewRow(content="lives in Paris", namespace=NS, kind="observation", supersedes=first.row_id)
    )
    async with Client(build_server(memory)) as client:
        for row_id in (first.row_id, second.row_id):
            chain = await call(client, "history", row_id=row_id)
            assert [(r["content"], r["status"]) for r in chain["history"]] == [
                ("lives in Lyon", "superseded"),
                ("lives in Paris", "active"),
            ]


async def test_capture_chunks_and_links_a_session(memory: Memory) -> None:
    long_result = "\n\n".join(f"paragraph {i}: " + "word " * 150 for i in range(3))
    async with Client(build_server(memory)) as client:
        turn = await call(
            client,
            "capture",
            session="s1",
            kind="turn",
            speaker="user",
            content="fix the login bug",
        )
        result = await call(
            client, "capture", session="s1", kind="tool_result", tool="grep", content=long_result
        )
        assert len(turn["row_ids"]) == 1
        assert len(result["row_ids"]) == 3
        linked = await call(client, "neighbors", row_id=result["row_ids"][0], types=["temporal"])
        assert turn["row_ids"][0] in {n["row"]["row_id"] for n in linked["neighbors"]}
        message = await error(client, "capture", session="s1", kind="turn", content="no speaker")
        assert "needs its speaker" in message
    rows = [row async for row in memory.export(namespace="agent-sessions")]
    assert rows[0].kind == "interaction"
    assert rows[1].content.startswith("tool result of grep: paragraph 0")
    assert {row.meta["thread"] for row in rows} == {"s1"}


async def test_errors_are_one_line_tool_errors(memory: Memory) -> None:
    async with Client(build_server(memory)) as client:
        assert "no memory row with id 'nope'" in await error(client, "history", row_id="nope")
        assert "empty query" in await error(client, "recall", query="  ")
        assert "invalid namespace" in await error(client, "remember", content="x", namespace="/")
        assert "holds no rows" in await error(client, "preload", hint="x", namespaces=["empty"])


async def test_a_confined_client_sees_only_its_prefix(memory: Memory) -> None:
    theirs = await memory.remember(
        NewRow(content="Bob's secret plan is to learn the cello", namespace="bob-notes")
    )
    async with Client(build_server(memory, McpOptions(namespace_prefix="alice-"))) as alice:
        mine = await call(alice, "remember", content="Alice plays the cello", namespace="alice-n")
        found = await call(alice, "recall", query="cello plan")
        assert [hit["namespace"] for hit in found["results"]] == ["alice-n"]
        window = await call(alice, "preload", hint="cello")
        assert "Bob" not in window["text"]
        assert mine["row_id"] in window["text"]
        outside = "outside this server's prefix 'alice-'"
        assert outside in await error(alice, "recall", query="cello", namespaces=["bob-notes"])
        assert outside in await error(alice, "preload", hint="cello", namespaces=["bob-notes"])
        assert outside in await error(alice, "remember", content="x", namespace="bob-notes")
        assert outside in await error(
            alice, "capture", session="s", kind="decision", content="x", namespace="bob-notes"
        )
        for tool in ("history", "neighbors"):
            assert "no memory row" in await error(alice, tool, row_id=theirs.row_id)
        names = {tool.name for tool in (await alice.list_tools()).tools}
        assert "forget" not in names
    options = McpOptions(namespace_prefix="alice-", allow_forget=True)
    async with Client(build_server(memory, options)) as alice:
        assert outside in await error(alice, "forget", namespace="bob-notes", confirm="bob-notes")
        erased = await call(alice, "forget", namespace="alice-n", confirm="alice-n")
        assert erased["rows"] == 1
    assert (await memory.get(theirs.row_id)).content.startswith("Bob's")


async def test_stdio_round_trip(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=PHI, args=["mcp", "--db", str(tmp_path / "stdio.db")], env=dict(os.environ)
    )
    async with Client(params, read_timeout_seconds=120) as client:
        await round_trip(client, NS)


async def test_http_round_trip_and_confinement(
    tmp_path: Path, minilm: MiniLMEmbedder, serve_http: Callable[..., str]
) -> None:
    db = tmp_path / "http.db"
    async with Memory.open(db, embedder=minilm) as memory:
        theirs = await memory.remember(
            NewRow(content="the other team's roadmap", namespace="team-b-notes")
        )
    url = serve_http(db, "--namespace-prefix", "team-a-")
    async with Client(url, read_timeout_seconds=120) as client:
        await round_trip(client, "team-a-notes")
        found = await call(client, "recall", query="roadmap")
        assert {hit["namespace"] for hit in found["results"]} == {"team-a-notes"}
        assert "no memory row" in await error(client, "history", row_id=theirs.row_id)


async def test_recall_about_one_person_reads_only_their_rows(memory: Memory) -> None:
    await memory.remember(
        NewRow(
            content="likes climbing", namespace=user_namespace("did:plc:ann"), kind="observation"
        )
    )
    await memory.remember(
        NewRow(
            content="likes climbing too",
            namespace=user_namespace("did:plc:ben"),
            kind="observation",
        )
    )
    async with Client(build_server(memory)) as client:
        found = await call(client, "recall", query="climbing", person="did:plc:ann")
        assert {hit["namespace"] for hit in found["results"]} == {"phi-users-did:plc:ann"}
        window = await call(client, "preload", hint="climbing", person="did:plc:ben")
        assert "too" in window["text"]
        assert "not a DID" in await error(client, "recall", query="x", person="ann")


async def test_recall_says_how_many_rows_of_its_scope_are_not_embedded_yet(
    memory: Memory,
) -> None:
    ann = user_namespace("did:plc:ann")
    await memory.remember(NewRow(content="ann likes climbing", namespace=ann))
    await memory.remember_many(
        [
            NewRow(content="ann climbed the north face", namespace=ann),
            NewRow(content="the gym opens at six", namespace=NS),
            NewRow(content="the gym closes at ten", namespace=NS),
        ],
        defer_embedding=True,
    )
    async with Client(build_server(memory)) as client:
        found = await call(client, "recall", query="north face", person="did:plc:ann")
        assert found["unembedded"] == 1
        assert "ann climbed the north face" in {hit["content"] for hit in found["results"]}
        found = await call(client, "recall", query="gym", namespaces=[NS])
        assert (len(found["results"]), found["unembedded"]) == (2, 2)
        assert (await call(client, "recall", query="gym"))["unembedded"] == 3
        await memory.embed_pending()
        assert (await call(client, "recall", query="gym"))["unembedded"] == 0


def test_http_refuses_a_public_address(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["mcp", "--http", "--host", "0.0.0.0", "--db", str(tmp_path / "m.db")]
    )
    assert result.exit_code == 2
    assert "not a loopback address" in result.output
