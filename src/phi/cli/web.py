"""`phi web`: the memory's HTTP API and the `/memory` page."""

from __future__ import annotations

from typing import Annotated

import typer

from phi.cli._edge import open_memory, run
from phi.config import Settings

__all__ = ["web_command"]


def web_command(
    db: Annotated[
        str | None, typer.Option("--db", help="Memory store (default: $PHI_HOME/memory.db).")
    ] = None,
    host: Annotated[str | None, typer.Option(help="Address (default $PHI_WEB_HOST).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default $PHI_WEB_PORT).")] = None,
) -> None:
    """Serve the memory API and the page at /memory (writes need $PHI_WEB_TOKEN)."""
    import uvicorn

    from phi.web import create_app

    settings = Settings()
    token = settings.web_token.get_secret_value() if settings.web_token else None
    app = create_app(lambda: open_memory(db), token=token)
    config = uvicorn.Config(
        app, host=host or settings.web_host, port=port or settings.web_port, log_level="info"
    )

    async def go() -> None:
        await uvicorn.Server(config).serve()

    run(go)
