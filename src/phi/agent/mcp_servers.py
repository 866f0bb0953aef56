"""External MCP servers mounted as toolsets on every run (`PHI_MCP_SERVERS`).

The settings name a TOML or JSON file listing servers, each a stdio command or an HTTP URL,
with a tool-name prefix and optional headers. A run opens a session to each server and
closes it after, unless the agent is entered (`async with agent`, as `phi run` does): then
one session per server lives as long as the agent, which matters for stdio servers (starting
`phi mcp` takes seconds). Each server fails alone: one that cannot start, or whose tool call
breaks, is reported in the run's activity and the log, and the run goes on without it. A
server that could not start is tried again when a session next opens: the next run, or
for `phi run`, its next start.

pydantic-ai's own `MCPToolset` needs the `fastmcp` client, which phi does not install; this
toolset speaks to servers through the `mcp` SDK's `Client` that phi's own server is tested
with.
"""

from __future__ import annotations

import json
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent, Tool
from pydantic_ai import RunContext
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from mcp import Client, StdioServerParameters
from phi.agent.deps import PhiDeps
from phi.agent.mcp_config import McpConfigError, McpServerConfig, load_mcp_servers

__all__ = [
    "McpConfigError",
    "McpServerConfig",
    "McpServerToolset",
    "load_mcp_servers",
    "mcp_toolsets",
]

logger = logging.getLogger("phi.agent.mcp")

_ANY_ARGS: Final = SchemaValidator(schema=core_schema.any_schema())
"""The server validates its own arguments against the schema it published."""


def _result_text(result: CallToolResult) -> str:
    texts = [part.text for part in result.content if isinstance(part, TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "(no text in the answer)"


@dataclass
class McpServerToolset(AbstractToolset[PhiDeps]):
    """One server's tools, prefixed. The outermost entry opens the session and the matching
    exit closes it (always in the same task, as the session's task group requires); nested
    entries (runs inside an entered agent) share it."""

    config: McpServerConfig
    failure: str | None = field(default=None, init=False)
    """Why the current session could not open, or None."""
    sessions_opened: int = field(default=0, init=False)
    """Sessions this toolset has opened (successfully) so far."""
    _tools: list[Tool] = field(default_factory=list, init=False, repr=False)
    _client: Client | None = field(default=None, init=False, repr=False)
    _stack: AsyncExitStack | None = field(default=None, init=False, repr=False)
    _entered: int = field(default=0, init=False, repr=False)
    _lock: anyio.Lock = field(default_factory=anyio.Lock, init=False, repr=False)

    @property
    def id(self) -> str:
        return f"mcp:{self.config.name}"

    def _client_for(self) -> Client:
        c = self.config
        if c.command is not None:
            program, *args = c.command
            params = StdioServerParameters(command=program, args=args, env=c.env or None)
            return Client(params, read_timeout_seconds=c.timeout)
        assert c.url is not None
        if not c.headers:
            return Client(c.url, read_timeout_seconds=c.timeout)
        http = httpx2.AsyncClient(headers=c.headers, timeout=c.timeout)
        transport = streamable_http_client(c.url, http_client=http)
        return Client(transport, read_timeout_seconds=c.timeout)

    async def __aenter__(self) -> McpServerToolset:
        async with self._lock:
            self._entered += 1
            if self._entered == 1:
                await self._open()
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        async with self._lock:
            self._entered -= 1
            if self._entered == 0:
                stack, self._stack, self._client = self._stack, None, None
                if stack is not None:
                    await _close_quietly(stack)
        return None

    async def _open(self) -> None:
        self.failure, self._tools = None, []
        stack = AsyncExitStack()
        try:
            # The session's own task group must stay open after this returns, so no
            # cancel scope may wrap entering it; its read timeout bounds the handshake.
            client = await stack.enter_async_context(self._client_for())
            with anyio.fail_after(self.config.timeout):
                self._tools = list((await client.list_tools()).tools)
        # A third-party server can fail in any way (a missing program, a refused connection,
        # a protocol error, an exception group from its task group); each is reported and
        # leaves this server out of the run, never the run itself.
        except Exception as exc:
            self.failure = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            logger.warning("MCP server %r unavailable: %s", self.config.name, self.failure)
            with anyio.CancelScope(shield=True):
                await _close_quietly(stack)
            return
        self._client, self._stack = client, stack
        self.sessions_opened += 1

    async def get_tools(self, ctx: RunContext[PhiDeps]) -> dict[str, ToolsetTool[PhiDeps]]:
        if self.failure is not None:
            line = f"MCP server {self.config.name!r} unavailable: {self.failure[:200]}"
            if line not in ctx.deps.activity.actions:  # once per run, not per model step
                ctx.deps.activity.record(line)
            return {}
        prefix = self.config.tool_prefix
        tools: dict[str, ToolsetTool[PhiDeps]] = {}
        for tool in self._tools:
            name = f"{prefix}_{tool.name}" if prefix else tool.name
            definition = ToolDefinition(
                name=name,
                description=tool.description or f"{tool.name} (MCP server {self.config.name})",
                parameters_json_schema=dict(tool.input_schema),
                metadata={"mcp_server": self.config.name, "mcp_tool": tool.name},
            )
            tools[name] = ToolsetTool(
                toolset=self, tool_def=definition, max_retries=1, args_validator=_ANY_ARGS
            )
        return tools

    async def call_tool(
        self,
        name: str,
        tool_args: dict[str, Any],
        ctx: RunContext[PhiDeps],
        tool: ToolsetTool[PhiDeps],
    ) -> str:
        assert tool.tool_def.metadata is not None
        original = str(tool.tool_def.metadata["mcp_tool"])
        if self._client is None:
            return f"error: MCP server {self.config.name!r} is not connected"
        try:
            with anyio.fail_after(self.config.timeout):
                result = await self._client.call_tool(original, tool_args)
        except Exception as exc:  # the server's failure, reported to the model
            reason = f"{type(exc).__name__}: {exc}"
            ctx.deps.activity.record(f"{name} failed on MCP server {self.config.name!r}: {reason}")
            return f"error: MCP server {self.config.name!r} failed: {reason}"
        text = _result_text(result)
        ctx.deps.activity.record(f"{name} (MCP {self.config.name}) → {text.splitlines()[0][:100]}")
        return f"error: {text}" if result.is_error else text


async def _close_quietly(stack: AsyncExitStack) -> None:
    try:
        await stack.aclose()
    except Exception as exc:  # a server that breaks on the way out is done
        logger.warning("closing an MCP session failed: %s", exc)


def mcp_toolsets(servers: tuple[McpServerConfig, ...]) -> list[AbstractToolset[PhiDeps]]:
    """One toolset per configured server, to mount on the agent."""
    return [McpServerToolset(server) for server in servers]
