"""`phi web`: the memory's HTTP API, the `/memory` page and the run journal at `/activity`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from phi.cli._edge import (
    Db,
    InSandbox,
    err_console,
    fail,
    memory_location,
    open_memory,
    run,
    settings,
)

if TYPE_CHECKING:
    from phi.config import Settings

__all__ = ["WebAccess", "web_access", "web_command"]


@dataclass(frozen=True, kw_only=True)
class WebAccess:
    """Who may reach the web app, from the settings and the command's options."""

    token: str | None
    """The bearer token (`PHI_WEB_TOKEN`)."""
    bind: str
    """The address to listen on."""
    public: bool
    """Reachable from other machines: reads need the token too."""
    hosts: list[str]
    """`Host` names answered."""


def web_access(current: Settings, host: str | None, trusted_host: list[str] | None) -> WebAccess:
    """The web app's access, refusing a public address without a token (`phi web` and
    `phi run --web` alike)."""
    from phi.web import LOOPBACK_HOSTS, is_loopback

    token = current.web_token.get_secret_value() if current.web_token else None
    bind = host or current.web_host
    public = not is_loopback(bind)
    if public and not token:
        fail(
            f"--host {bind!r} is not a loopback address and PHI_WEB_TOKEN is not set: anyone "
            "who reaches it could read every person's memory; set PHI_WEB_TOKEN (reads then "
            "need it too) or bind 127.0.0.1"
        )
    if public:
        err_console.print(
            f"[bold yellow]warning:[/] serving on {bind!r}, reachable from other machines: "
            "every request, reads included, needs the bearer token",
            highlight=False,
            soft_wrap=True,
        )
    hosts = [*LOOPBACK_HOSTS, *current.web_trusted_hosts, *(trusted_host or ())]
    if public and bind not in ("0.0.0.0", "::"):
        hosts.append(bind)
    return WebAccess(token=token, bind=bind, public=public, hosts=hosts)


def web_command(
    db: Db = None,
    sandbox: InSandbox = False,
    host: Annotated[str | None, typer.Option(help="Address (default $PHI_WEB_HOST).")] = None,
    port: Annotated[
        int | None, typer.Option(help="Port (default $PHI_WEB_PORT; 0 picks a free one).")
    ] = None,
    trusted_host: Annotated[
        list[str] | None,
        typer.Option(
            "--trusted-host",
            help="A Host name to answer besides loopback (repeatable; '*' for any; "
            "also $PHI_WEB_TRUSTED_HOSTS).",
        ),
    ] = None,
) -> None:
    """Serve the memory API, the page at /memory and the run journal at /activity (writes
    need $PHI_WEB_TOKEN; off loopback, reads need it too)."""
    from phi.cli._serve import base_url, listen, serve
    from phi.redact import redact_logs
    from phi.runtime.journal import RunJournal
    from phi.web import create_app

    current = settings()
    access = web_access(current, host, trusted_host)
    # Bound first: a taken port is one line before the store is opened, and the port the
    # note names is the one bound (--port 0 picks a free one).
    with listen(access.bind, current.web_port if port is None else port) as sock:
        # Opened once here, so a mistyped --db fails now, not at the first request.
        memory = open_memory(db, sandbox=sandbox, creates=True)
        app = create_app(
            lambda: memory,
            token=access.token,
            trusted_hosts=access.hosts,
            token_for_reads=access.public,
            journal=RunJournal.at_home(current.home),
        )
        url = base_url(access.bind, sock)
        redact_logs("uvicorn", "uvicorn.access")  # a request line may carry a ?token=
        ready = (
            f"phi's memory ({memory_location(db, sandbox=sandbox)}) at {url}/memory, "
            f"API docs at {url}/docs, runs at {url}/activity"
        )
        run(lambda: serve(app, sock, log_level="info", ready=ready))
