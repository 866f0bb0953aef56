"""The memory graph over MCP: `link` two rows, `walk` up to three hops.

Registered by `build_server` next to the other tools; confinement goes through the same
`Scope`: both ends of a link and the start of a walk must lie inside the client's prefix.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from phi.errors import PhiError
from phi.mcp._scope import Scope
from phi.memory import EdgeType, Memory
from phi.memory.memory import MAX_WALK_DEPTH
from phi.memory.serial import to_json

__all__ = ["add_graph_tools"]

RowId = Annotated[str, Field(description="A row id from `recall`, `remember` or `preload`.")]


def add_graph_tools(server: MCPServer, memory: Memory, scope: Scope) -> None:
    """Register `link` and `walk` on `server`."""

    @server.tool()
    async def link(
        src: Annotated[str, Field(description="Row the edge starts from (e.g. the cause).")],
        dst: Annotated[str, Field(description="Row the edge points to (e.g. the effect).")],
        edge_type: Annotated[EdgeType, Field(description="`causal` for cause and effect.")],
        weight: Annotated[float, Field(gt=0, le=1)] = 1.0,
    ) -> dict[str, Any]:
        """Link two rows of one namespace, e.g. a decision to its result (`causal`)."""
        try:
            scope.check_write(scope.check_row(await memory.get(src)).namespace)
            scope.check_row(await memory.get(dst))
            edge = await memory.link(src, dst, edge_type=edge_type, weight=weight)
        except PhiError as exc:
            raise ToolError(str(exc)) from None
        edge_json: dict[str, Any] = to_json(edge)
        return edge_json

    @server.tool()
    async def walk(
        row_id: RowId,
        depth: Annotated[int, Field(ge=1, le=MAX_WALK_DEPTH)] = 2,
        types: Annotated[list[EdgeType] | None, Field(description="Only these edge types.")] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 100,
    ) -> dict[str, Any]:
        """The rows reachable from a row within `depth` hops (1-3), nearest first, each with
        the edge (type, weight) it was reached by and the row it was reached from."""
        try:
            scope.check_row(await memory.get(row_id))
            steps = await memory.walk(row_id, depth=depth, types=types, limit=limit)
        except PhiError as exc:
            raise ToolError(str(exc)) from None
        return {"steps": to_json([s for s in steps if scope.allows(s.row.namespace)])}
