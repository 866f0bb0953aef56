"""`phi web`: the memory's HTTP API and the `/memory` page."""

from __future__ import annotations

from typing import Annotated

import typer

from phi.cli._edge import (
    Db,
    InSandbox,
    err_console,
    fail,
    memory_location,
    note,
    open_memory,
    run,
    settings,
)

__all__ = ["web_command"]


def web_command(
    db: Db = None,
    sandbox: InSandbox = False,
    host: Annotated[str | None, typer.Option(help="Address (default $PHI_WEB_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default $PHI_WEB_PORT).")] = None,
    trusted_host: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-host",
            help="A Host name to answer besides loopback (repeatable; '*' for any; "
            "also $PHI_WEB_TRUSTED_HOSTS).",
        ),
    ] = None,
) -> None:
    """Serve the memory API and the page at /memory (writes need $PHI_WEB_TOKEN; off
    loopback, reads need it too)."""
    import uvicorn

    from phi.web import LOOPBACK_HOSTS, create_app, is_loopback

    current = settings()
    token = current.web_token.get_secret_value() if current.web_token else None
    address, at = host or current.web_host, port or current.web_port
    public = not is_loopback(address)
    if public and not token:
        fail(
            f"--host {address!r} is not a loopback address and PHI_WEB_TOKEN is not set: anyone "
            "who reaches it could read every person's memory; set PHI_WEB_TOKEN (reads then "
            "need it too) or bind 127.0.0.1"
        )
    if public:
        err_console.print(
            f"[bold yellow]warning:[/] serving on {address!r}, reachable from other machines: "
            "every request, reads included, needs the bearer token",
            highlight=False,
            soft_wrap=True,
        )
    hosts = [*LOOPBACK_HOSTS, *current.web_trusted_hosts, *(trusted_host or ())]
    if public and address not in ("0.0.0.0", "::"):
        hosts.append(address)
    # Opened once here, so a mistyped --db fails now, not at the first request.
    memory = open_memory(db, sandbox=sandbox, creates=True)
    app = create_app(lambda: memory, token=token, trusted_hosts=hosts, token_for_reads=public)
    config = uvicorn.Config(app, host=address, port=at, log_level="info")

    async def go() -> None:
        note(
            f"phi's memory ({memory_location(db, sandbox=sandbox)}) at "
            f"http://{address}:{at}/memory, API docs at http://{address}:{at}/docs"
        )
        await uvicorn.Server(config).serve()

    run(go)
