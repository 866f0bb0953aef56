"""`phi mcp`: serve phi's memory to any agent over MCP (stdio, or streamable HTTP)."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from phi.cli._edge import fail, open_memory, run
from phi.errors import UserError
from phi.mcp import DEFAULT_SESSION_NAMESPACE, McpOptions, build_server

__all__ = ["mcp_command"]


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def mcp_command(
    db: Annotated[
        str | None, typer.Option("--db", help="Memory store (default: $PHI_HOME/memory.db).")
    ] = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option(help="Loopback address for --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for --http.")] = 8765,
    namespace_prefix: Annotated[
        str | None,
        typer.Option("--namespace-prefix", help="Confine the client to namespaces starting so."),
    ] = None,
    session_namespace: Annotated[
        str, typer.Option(help="Default namespace of `capture` (the prefix is prepended).")
    ] = DEFAULT_SESSION_NAMESPACE,
    allow_forget: Annotated[
        bool, typer.Option("--allow-forget", help="Offer the `forget` tool (a hard delete).")
    ] = False,
) -> None:
    """Serve phi's memory over MCP: remember, recall, preload, neighbors, history, capture."""
    if http and not _loopback(host):
        fail(f"--host {host!r} is not a loopback address; the MCP server has no authentication")
    try:
        options = McpOptions(
            namespace_prefix=namespace_prefix,
            allow_forget=allow_forget,
            session_namespace=session_namespace,
        )
    except UserError as exc:
        fail(str(exc))

    async def go() -> None:
        async with open_memory(db) as memory:
            server = build_server(memory, options)
            if http:
                await server.run_streamable_http_async(host=host, port=port)
            else:
                await server.run_stdio_async()

    run(go)
