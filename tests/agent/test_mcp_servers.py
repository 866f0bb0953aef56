"""External MCP servers mounted into phi's runs, against real servers on loopback: phi's own
`phi mcp` (a shared team memory) over streamable HTTP and over stdio, next to servers that
cannot be reached, which are reported and leave the run going."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from pydantic_ai import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.agent import AgentConfig, PhiDeps
from phi.agent.core import build_agent, run
from phi.agent.mcp_config import McpConfigError, McpServerConfig, load_mcp_servers
from phi.agent.mcp_servers import McpServerToolset
from phi.memory import Memory, MiniLMEmbedder
from phi.memory.learning import Blocks

from ._quiet import QuietClient
from .test_gate_logic import deps, notification

pytestmark = pytest.mark.anyio

PHI = str(Path(sys.executable).parent / "phi")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def team_server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`phi mcp --http` over a team memory file: (its URL, the file)."""
    db = tmp_path / "team.db"
    port = free_port()
    log = (tmp_path / "team-mcp.log").open("wb")
    process = subprocess.Popen(
        [PHI, "mcp", "--db", str(db), "--http", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ),
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (tmp_path / "team-mcp.log").read_text()
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "phi mcp --http did not start"
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", db
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def scripted(calls: list[tuple[str, dict[str, Any]]], seen: dict[str, Any]) -> FunctionModel:
    """Calls the tools in `calls` one per step, keeping the tool names offered and what each
    call returned, then answers `done`."""

    async def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["tools"] = sorted(t.name for t in info.function_tools)
        returns = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        seen["returns"] = [str(p.content) for p in returns]
        if len(returns) < len(calls):
            name, args = calls[len(returns)]
            return ModelResponse(parts=[ToolCallPart(tool_name=name, args=args)])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(brain)


def run_deps(memory: Memory) -> PhiDeps:
    d = deps(notification("alice.test"))
    d.memory = memory
    d.blocks = Blocks(memory=memory)
    d.client = cast(Any, QuietClient())
    return d


async def test_team_memory_over_http_and_stdio_with_unreachable_servers_reported(
    team_server: tuple[str, Path], tmp_path: Path, memory: Memory, minilm: MiniLMEmbedder
) -> None:
    url, team_db = team_server
    servers = (
        McpServerConfig(name="team", url=url, prefix="team", timeout=60),
        McpServerConfig(
            name="notes",
            command=[PHI, "mcp", "--db", str(tmp_path / "notes.db")],
            env=dict(os.environ),
            timeout=60,
        ),
        McpServerConfig(name="gone", url=f"http://127.0.0.1:{free_port()}/mcp", timeout=5),
        McpServerConfig(name="missing", command=[str(tmp_path / "no-such-server")], timeout=5),
    )
    seen: dict[str, Any] = {}
    model = scripted(
        [
            (
                "team_remember",
                {"content": "the release freeze starts on Friday", "namespace": "team"},
            ),
            ("notes_remember", {"content": "alice prefers short replies", "namespace": "n"}),
            ("team_recall", {"query": "when does the freeze start", "namespace": "team"}),
        ],
        seen,
    )
    d = run_deps(memory)
    agent = build_agent(model, AgentConfig(mcp_servers=servers))
    assert await run(agent, d) == "done"

    # Both of phi mcp's transports mounted with their prefixes; the dead servers offer nothing.
    assert {"team_remember", "team_recall", "notes_remember", "notes_recall"} <= set(seen["tools"])
    assert not [t for t in seen["tools"] if t.startswith(("gone_", "missing_"))]
    assert "reply_to" in seen["tools"]  # phi's own tools are still there
    assert "release freeze starts on Friday" in seen["returns"][2]
    unavailable = [a for a in d.activity.actions if "unavailable" in a]
    assert [a.split("'")[1] for a in unavailable] == ["gone", "missing"]

    # The write went to the team's memory file, through the server.
    async with Memory.open(team_db, embedder=minilm) as team:
        rows = [row async for row in team.export(namespace="team")]
    assert [r.content for r in rows] == ["the release freeze starts on Friday"]


async def test_an_entered_agent_keeps_one_session_across_runs(
    team_server: tuple[str, Path], memory: Memory
) -> None:
    url, _ = team_server
    agent = build_agent(
        scripted([("team_recall", {"query": "freeze"})], {}),
        AgentConfig(mcp_servers=(McpServerConfig(name="team", url=url),)),
    )
    (toolset,) = [t for t in agent.toolsets if isinstance(t, McpServerToolset)]
    await run(agent, run_deps(memory))
    await run(agent, run_deps(memory))
    assert toolset.sessions_opened == 2  # one per run
    async with agent:  # as `phi run` does
        for _ in range(3):
            d = run_deps(memory)
            assert await run(agent, d) == "done"
            assert any(a.startswith("team_recall (MCP team)") for a in d.activity.actions)
    assert toolset.sessions_opened == 3  # the three runs shared one


async def test_a_tiny_model_gets_no_external_tools(memory: Memory) -> None:
    seen: dict[str, Any] = {}
    servers = (McpServerConfig(name="gone", url=f"http://127.0.0.1:{free_port()}/mcp"),)
    agent = build_agent(scripted([], seen), AgentConfig(mcp_servers=servers), tools=["recall"])
    await run(agent, run_deps(memory))
    assert seen["tools"] == ["recall"]


def test_servers_file_in_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "servers.toml"
    toml.write_text(
        '[[servers]]\nname = "team"\nurl = "http://127.0.0.1:8765/mcp"\n'
        'headers = { Authorization = "Bearer x" }\n\n'
        '[[servers]]\nname = "pdsx"\ncommand = ["pdsx-mcp"]\nprefix = "repo"\n'
    )
    loaded = load_mcp_servers(toml)
    assert [(s.name, s.tool_prefix, s.url, s.command) for s in loaded] == [
        ("team", "team", "http://127.0.0.1:8765/mcp", None),
        ("pdsx", "repo", None, ["pdsx-mcp"]),
    ]
    assert loaded[0].headers == {"Authorization": "Bearer x"}
    as_json = tmp_path / "servers.json"
    as_json.write_text(json.dumps({"servers": [s.model_dump() for s in loaded]}))
    assert load_mcp_servers(as_json) == loaded


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"servers": [{"name": "x"}]}', "needs exactly one of `command` or `url`"),
        ('{"servers": [{"name": "x", "url": "u", "command": ["c"]}]}', "exactly one of"),
        ('{"servers": [{"name": "x", "command": ["c"], "headers": {"a": "b"}}]}', "only apply"),
        ('{"servers": [{"name": "x", "url": "u", "colour": 1}]}', "servers.0.colour"),
        ('{"servers": [{"name": "a", "url": "u"}, {"name": "a", "url": "v"}]}', "share a tool"),
        ("{nope", "not valid JSON"),
    ],
)
def test_a_malformed_servers_file_is_one_clear_error(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "servers.json"
    path.write_text(text)
    with pytest.raises(McpConfigError, match=r"servers\.json") as raised:
        load_mcp_servers(path)
    assert message in str(raised.value)


def test_a_missing_servers_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="No such file"):
        load_mcp_servers(tmp_path / "absent.toml")
