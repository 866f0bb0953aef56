"""`phi mcp`: serve phi's memory to any agent over MCP (stdio, or streamable HTTP)."""

from __future__ import annotations

import ipaddress
from typing import Annotated

import typer

from phi.cli._edge import Db, InSandbox, fail, note, open_memory, run
from phi.errors import UserError

__all__ = ["mcp_command"]


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def mcp_command(
    db: Db = None,
    sandbox: InSandbox = False,
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
        str | None,
        typer.Option(
            help="Default namespace of `capture` (the prefix is prepended; default agent-sessions)."
        ),
    ] = None,
    allow_forget: Annotated[
        bool, typer.Option("--allow-forget", help="Offer the `forget` tool (a hard delete).")
    ] = False,
) -> None:
    """Serve phi's memory over MCP: remember, recall, preload, neighbors, history, capture."""
    if http and not _loopback(host):
        fail(f"--host {host!r} is not a loopback address; the MCP server has no authentication")
    from phi.mcp import DEFAULT_SESSION_NAMESPACE, McpOptions, build_server

    try:
        options = McpOptions(
            namespace_prefix=namespace_prefix,
            allow_forget=allow_forget,
            session_namespace=session_namespace or DEFAULT_SESSION_NAMESPACE,
        )
    except UserError as exc:
        fail(str(exc))

    async def go() -> None:
        async with open_memory(db, sandbox=sandbox, creates=True) as memory:
            server = build_server(memory, options)
            if http:
                note(f"MCP over streamable HTTP at http://{host}:{port}/mcp (Ctrl-C stops)")
                await server.run_streamable_http_async(host=host, port=port)
            else:
                await server.run_stdio_async()

    run(go)
