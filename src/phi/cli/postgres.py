"""`phi postgres up | down | status`: a local PostgreSQL with pgvector for development."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phi.cli._edge import console, fail
from phi.config import Settings
from phi.postgres import DEFAULT_PORT, PostgresServerError, server_down, server_status, server_up

__all__ = ["postgres_app"]

postgres_app = typer.Typer(
    help="A local PostgreSQL with pgvector on 127.0.0.1 (for PHI_MEMORY_URL).",
    no_args_is_help=True,
)

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        envvar="PHI_POSTGRES_DIR",
        help="Where the server keeps its data (default: $PHI_HOME/postgres).",
    ),
]
Port = Annotated[
    int, typer.Option("--port", envvar="PHI_POSTGRES_PORT", help="TCP port on 127.0.0.1.")
]


def _data_dir(given: Path | None) -> Path:
    return given if given is not None else Settings().home / "postgres"


@postgres_app.command("up")
def up(data_dir: DataDir = None, port: Port = DEFAULT_PORT) -> None:
    """Start the server unless it runs; print its URL as the last line."""
    try:
        status = server_up(_data_dir(data_dir), port=port)
    except PostgresServerError as exc:
        fail(str(exc), code=1)
    if status.restarted is not None:
        console.print(status.restarted, highlight=False)
    console.print(f"PostgreSQL with pgvector runs (pid {status.pid}, data {status.data_dir})")
    print(status.url)


@postgres_app.command("down")
def down(data_dir: DataDir = None) -> None:
    """Stop the server."""
    try:
        stopped = server_down(_data_dir(data_dir))
    except PostgresServerError as exc:
        fail(str(exc), code=1)
    console.print("stopped" if stopped else "not running")


@postgres_app.command("status")
def status(data_dir: DataDir = None, port: Port = DEFAULT_PORT) -> None:
    """Whether the server runs; its URL as the last line when it does (exit 1 when not)."""
    state = server_status(_data_dir(data_dir), port=port)
    if not state.running:
        console.print(f"not running (data {state.data_dir})")
        raise typer.Exit(1)
    console.print(f"running (pid {state.pid}, data {state.data_dir})")
    print(state.url)
