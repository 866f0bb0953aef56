"""The watched services by name: the prompt names them exactly, `check_service` takes only
those names (an enum in its schema) and reports the status now and the last transition,
against a real HTTP server on loopback that goes down and comes back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from phi.agent import AgentConfig, PhiDeps
from phi.agent.core import run, toolset_for
from phi.agent.tools.services import known_services_block, service_names
from phi.memory import Memory
from phi.memory.learning import Blocks

from .test_gate_logic import WHEN, deps, notification

pytestmark = pytest.mark.anyio


@dataclass
class Health:
    """A loopback server answering `status` to every request."""

    url: str
    status: int = 200


@pytest.fixture
async def health() -> AsyncIterator[Health]:
    server_state = Health(url="")

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        code = server_state.status
        writer.write(
            f"HTTP/1.1 {code} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server_state.url = f"http://127.0.0.1:{port}/xrpc/_health"
    async with server:
        yield server_state


def test_names_are_hosts_with_paths_only_where_hosts_repeat() -> None:
    assert service_names(
        ("https://pds.example/xrpc/_health", "https://relay.example/a", "https://relay.example/b")
    ) == {
        "pds.example": "https://pds.example/xrpc/_health",
        "relay.example/a": "https://relay.example/a",
        "relay.example/b": "https://relay.example/b",
    }


def service_deps(memory: Memory, urls: tuple[str, ...]) -> PhiDeps:
    d = deps(notification("alice.test"))
    d.memory, d.blocks = memory, Blocks(memory=memory)
    d.config = AgentConfig(services=urls)
    return d


async def check_via_agent(d: PhiDeps, name: str) -> tuple[dict[str, Any], str]:
    """One run whose model calls `check_service(name)`: (its schema, its answer)."""
    seen: dict[str, Any] = {}

    async def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returns:
            seen["answer"] = str(returns[0].content)
            return ModelResponse(parts=[TextPart("done")])
        (tool,) = [t for t in info.function_tools if t.name == "check_service"]
        seen["schema"] = tool.parameters_json_schema
        return ModelResponse(parts=[ToolCallPart(tool_name="check_service", args={"name": name})])

    agent = Agent(
        FunctionModel(brain),
        deps_type=PhiDeps,
        toolsets=[toolset_for(d.config, only=frozenset({"check_service"}))],
    )
    await run(agent, d)
    return seen["schema"], seen["answer"]


async def test_check_reports_status_and_last_transition(memory: Memory, health: Health) -> None:
    d = service_deps(memory, (health.url,))
    name = health.url.split("/")[2]  # 127.0.0.1:PORT
    assert await known_services_block(d) == (
        "[KNOWN SERVICES — check_service(name) takes exactly these names]\n"
        f"- {name} ({health.url}): not checked yet"
    )

    schema, answer = await check_via_agent(d, name)
    assert schema["properties"]["name"]["enum"] == [name]
    assert answer == (
        f"{name}: up (200), checked just now; no transition seen (up since the first check, "
        "just now)"
    )

    health.status = 503
    d.now = WHEN + timedelta(hours=1)
    _, answer = await check_via_agent(d, name)
    assert answer == f"{name}: down (503), checked just now; last transition: went down just now"

    health.status = 200
    d.now = WHEN + timedelta(hours=3)
    _, answer = await check_via_agent(d, name)
    assert answer.endswith("last transition: recovered just now")
    d.now = WHEN + timedelta(hours=5)
    assert (await known_services_block(d)).endswith(
        "up (200), checked 2h ago; last transition: recovered 2h ago"
    )


async def test_no_watched_services_means_no_tool_and_no_block(memory: Memory) -> None:
    d = service_deps(memory, ())
    assert await known_services_block(d) == ""
    offered: list[str] = []

    async def brain(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered.extend(t.name for t in info.function_tools)
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(brain), deps_type=PhiDeps, toolsets=[toolset_for(d.config)])
    await run(agent, d)
    assert "check_service" not in offered
    assert "core_block_view" in offered
