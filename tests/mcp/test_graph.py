"""The memory graph: `Memory.link` and `Memory.walk`, as the MCP tools and the CLI see them."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from typer.testing import CliRunner

from mcp import Client
from phi.cli import app
from phi.errors import InvalidInput, RowNotFound
from phi.mcp import McpOptions, build_server
from phi.memory import Memory, MiniLMEmbedder, NewRow, Row

pytestmark = pytest.mark.anyio

NS = "team-a-sessions"


async def chain(memory: Memory) -> list[Row]:
    """prompt -> decision -> result -> follow-up, linked by causal edges."""
    texts = [
        "user: the nightly export job runs out of memory",
        "decision: stream the export in batches of 500 rows instead of loading it all",
        "tool result: export finished with 180 MB peak memory",
        "decision: lower the batch size alarm threshold in monitoring",
    ]
    rows = [await memory.remember(NewRow(content=t, namespace=NS)) for t in texts]
    for cause, effect in itertools.pairwise(rows):
        await memory.link(cause.row_id, effect.row_id, edge_type="causal")
    return rows


async def test_walk_follows_causal_edges_up_to_three_hops(memory: Memory) -> None:
    rows = await chain(memory)
    ids = [r.row_id for r in rows]
    for depth in (1, 2, 3):
        steps = await memory.walk(ids[0], depth=depth, types=["causal"])
        assert [(s.depth, s.via, s.row.row_id, s.edge.edge_type) for s in steps] == [
            (hop, ids[hop - 1], ids[hop], "causal") for hop in range(1, depth + 1)
        ]
    # From the middle, both directions, nearest first.
    steps = await memory.walk(ids[2], depth=1, types=["causal"])
    assert {s.row.row_id for s in steps} == {ids[1], ids[3]}
    # Without a type filter the automatic temporal edges are walked too, each row once.
    every = await memory.walk(ids[0], depth=3)
    assert sorted(s.row.row_id for s in every) == sorted(ids[1:])
    with pytest.raises(InvalidInput, match="depth 4 is out of range 1-3"):
        await memory.walk(ids[0], depth=4)


async def test_link_is_checked(memory: Memory) -> None:
    rows = await chain(memory)
    other = await memory.remember(
        NewRow(content="a note somewhere else", namespace="team-b-sessions")
    )
    with pytest.raises(InvalidInput, match="different namespaces"):
        await memory.link(rows[0].row_id, other.row_id, edge_type="causal")
    with pytest.raises(InvalidInput, match="unknown edge type 'because'"):
        await memory.link(rows[0].row_id, rows[1].row_id, edge_type="because")  # type: ignore[arg-type]
    with pytest.raises(RowNotFound):
        await memory.link(rows[0].row_id, "no-such-row", edge_type="causal")
    with pytest.raises(InvalidInput, match="to itself"):
        await memory.link(rows[0].row_id, rows[0].row_id, edge_type="causal")


async def call(client: Client, tool: str, /, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    content: dict[str, Any] = result.structured_content
    return content


async def test_mcp_link_and_walk_stay_inside_the_prefix(memory: Memory) -> None:
    rows = await chain(memory)
    outside = await memory.remember(
        NewRow(content="team b's private plan", namespace="team-b-sessions")
    )
    server = build_server(memory, McpOptions(namespace_prefix="team-a-"))
    async with Client(server) as client:
        walked = await call(client, "walk", row_id=rows[0].row_id, depth=3, types=["causal"])
        assert [(s["depth"], s["row"]["row_id"]) for s in walked["steps"]] == [
            (1, rows[1].row_id),
            (2, rows[2].row_id),
            (3, rows[3].row_id),
        ]
        linked = await call(
            client, "link", src=rows[0].row_id, dst=rows[3].row_id, edge_type="reference"
        )
        assert linked == {
            "src": rows[0].row_id,
            "dst": rows[3].row_id,
            "edge_type": "reference",
            "weight": 1.0,
        }
        refused = await client.call_tool("walk", {"row_id": outside.row_id})
        assert refused.is_error
        assert refused.content[0].text.endswith(f"no memory row with id {outside.row_id!r}")  # type: ignore[union-attr]
        refused = await client.call_tool(
            "link", {"src": rows[0].row_id, "dst": outside.row_id, "edge_type": "causal"}
        )
        assert refused.is_error
    assert [
        n.edge.edge_type for n in await memory.neighbors(rows[3].row_id, types=["reference"])
    ] == ["reference"]


def test_cli_walk_and_link(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    db = str(tmp_path / "memory.db")

    async def setup() -> list[Row]:
        async with Memory.open(db, embedder=minilm) as memory:
            return await chain(memory)

    rows = anyio.run(setup)
    runner = CliRunner()
    done = runner.invoke(
        app,
        ["memory", "walk", rows[1].row_id, "--depth", "1", "-t", "causal", "--db", db, "--json"],
    )
    assert done.exit_code == 0, done.output
    steps = json.loads(done.stdout)["steps"]
    assert [(s["depth"], s["row"]["row_id"]) for s in steps] == [
        (1, rows[0].row_id),
        (1, rows[2].row_id),
    ] or [(s["depth"], s["row"]["row_id"]) for s in steps] == [
        (1, rows[2].row_id),
        (1, rows[0].row_id),
    ]
    done = runner.invoke(app, ["memory", "walk", rows[1].row_id, "--depth", "5", "--db", db])
    assert done.exit_code == 2
    assert "depth 5 is out of range 1-3" in done.output
    done = runner.invoke(
        app, ["memory", "link", rows[3].row_id, rows[0].row_id, "-t", "semantic", "--db", db]
    )
    assert done.exit_code == 0, done.output
    assert done.stdout.strip() == f"linked {rows[3].row_id} -semantic-> {rows[0].row_id}"
    done = runner.invoke(
        app, ["memory", "link", rows[3].row_id, rows[0].row_id, "-t", "x", "--db", db]
    )
    assert done.exit_code == 2
    assert "unknown edge type 'x'" in done.output


async def test_mcp_capture_links_a_result_to_the_sessions_decision(memory: Memory) -> None:
    async with Client(build_server(memory)) as client:
        decided = await call(
            client,
            "capture",
            session="s1",
            kind="decision",
            content="retry the flaky upload with exponential backoff",
        )
        result = await call(
            client,
            "capture",
            session="s1",
            kind="tool_result",
            tool="pytest",
            content="upload tests: 12 passed",
        )
        other = await call(
            client, "capture", session="s2", kind="error", content="unrelated session failed"
        )
    (decision_id,) = decided["row_ids"]
    causal = await memory.neighbors(decision_id, types=["causal"])
    assert [(n.edge.src, n.edge.dst) for n in causal] == [(decision_id, result["row_ids"][0])]
    assert await memory.neighbors(other["row_ids"][0], types=["causal"]) == []


def test_walk_help_names_every_edge_type() -> None:
    """The help spells the types out (the CLI imports no model at start-up): keep them in step."""
    from phi.memory.model import EDGE_TYPES

    result = CliRunner().invoke(app, ["memory", "walk", "--help"], terminal_width=200)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert all(edge_type in text for edge_type in EDGE_TYPES), text
