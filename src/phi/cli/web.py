"""`phi web`: the memory's HTTP API and the `/memory` page."""

from __future__ import annotations

from typing import Annotated

import typer

from phi.cli._edge import Db, InSandbox, memory_location, note, open_memory, run, settings

__all__ = ["web_command"]


def web_command(
    db: Db = None,
    sandbox: InSandbox = False,
    host: Annotated[str | None, typer.Option(help="Address (default $PHI_WEB_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default $PHI_WEB_PORT).")] = None,
) -> None:
    """Serve the memory API and the page at /memory (writes need $PHI_WEB_TOKEN)."""
    import uvicorn

    from phi.web import create_app

    current = settings()
    token = current.web_token.get_secret_value() if current.web_token else None
    # Opened once here, so a mistyped --db fails now, not at the first request.
    memory = open_memory(db, sandbox=sandbox, creates=True)
    app = create_app(lambda: memory, token=token)
    address, at = host or current.web_host, port or current.web_port
    config = uvicorn.Config(app, host=address, port=at, log_level="info")

    async def go() -> None:
        note(
            f"phi's memory ({memory_location(db, sandbox=sandbox)}) at "
            f"http://{address}:{at}/memory, API docs at http://{address}:{at}/docs"
        )
        await uvicorn.Server(config).serve()

    run(go)
