"""`phi mcp`: serve phi's memory to any agent over MCP (stdio, or streamable HTTP)."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from phi.cli._edge import (
    Db,
    InSandbox,
    fail,
    memory_location,
    note,
    open_memory,
    run,
    shown_location,
)
from phi.cli._serve import base_url, listen, serve
from phi.errors import UserError

if TYPE_CHECKING:
    import socket

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
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            help="phi's home folder (default $PHI_HOME or ~/.phi): MCP clients start servers "
            "with a filtered environment, so give it here in the client's configuration.",
        ),
    ] = None,
    sandbox: InSandbox = False,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at /mcp instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option(help="Loopback address for --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for --http (0 picks a free one).")] = 8765,
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
        bool,
        typer.Option(
            "--allow-forget", help="Offer the `forget` and `forget_row` tools (hard deletes)."
        ),
    ] = False,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="With --http: require a bearer token; lines 'PREFIX TOKEN' confine each "
            "token to namespaces starting with PREFIX. Allows a non-loopback --host.",
        ),
    ] = None,
) -> None:
    """Serve phi's memory over MCP: remember, recall, preload, neighbors, history, capture."""
    if home is not None:
        # The one setting an MCP client's filtered environment loses; set before anything
        # reads the settings, so the store, tokens and journal all follow it.
        os.environ["PHI_HOME"] = str(home.expanduser().resolve())
    if token_file is not None:
        if not http:
            fail("--token-file needs --http (stdio has no tokens: the client owns the process)")
        _serve_remote(db, sandbox, host, port, token_file, session_namespace, allow_forget)
        return
    if http and not _loopback(host):
        fail(
            f"--host {host!r} is not a loopback address; the MCP server has no authentication"
            " (give --token-file to require bearer tokens)"
        )
    from phi.mcp import DEFAULT_SESSION_NAMESPACE, McpOptions, build_server

    try:
        options = McpOptions(
            namespace_prefix=namespace_prefix,
            allow_forget=allow_forget,
            session_namespace=session_namespace or DEFAULT_SESSION_NAMESPACE,
        )
    except UserError as exc:
        fail(str(exc))

    async def go(sock: socket.socket | None) -> None:
        async with open_memory(db, sandbox=sandbox, creates=True) as memory:
            where = shown_location(memory_location(db, sandbox=sandbox))
            note(f"phi mcp serves the memory at {where}")
            server = build_server(memory, options)
            if sock is None:
                await server.run_stdio_async()
                return
            ready = f"MCP over streamable HTTP at {base_url(host, sock)}/mcp (Ctrl-C stops)"
            app = server.streamable_http_app(host=host)
            await serve(app, sock, log_level=server.settings.log_level.lower(), ready=ready)

    if not http:
        run(lambda: go(None))
        return
    with listen(host, port) as sock:
        run(lambda: go(sock))


def _serve_remote(
    db: str | None,
    sandbox: bool,
    host: str,
    port: int,
    token_file: Path,
    session_namespace: str | None,
    allow_forget: bool,
) -> None:
    """Streamable HTTP behind bearer tokens, each confined to its prefix (`phi.mcp.remote`)."""
    from phi.mcp import DEFAULT_SESSION_NAMESPACE, McpOptions
    from phi.mcp.remote import build_remote_app, load_tokens
    from phi.redact import redact_logs

    try:
        tokens = load_tokens(token_file)
        options = McpOptions(
            allow_forget=allow_forget,
            session_namespace=session_namespace or DEFAULT_SESSION_NAMESPACE,
        )
    except UserError as exc:
        fail(str(exc))

    async def go(sock: socket.socket) -> None:
        async with open_memory(db, sandbox=sandbox, creates=True) as memory:
            where = shown_location(memory_location(db, sandbox=sandbox))
            note(f"phi mcp serves the memory at {where}")
            app = build_remote_app(memory, tokens, options, host=host)
            url = base_url(host, sock)
            ready = f"MCP over streamable HTTP at {url}/mcp, bearer tokens required"
            redact_logs("uvicorn", "uvicorn.access")  # a request line may carry a ?token=
            await serve(app, sock, log_level="warning", ready=ready)

    with listen(host, port) as sock:
        run(lambda: go(sock))
