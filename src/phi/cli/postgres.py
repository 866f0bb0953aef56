"""`phi postgres up | down | status | rotate-password`: a local PostgreSQL with pgvector,
closed to anyone without its password, for development."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from phi.cli._edge import AsJson, console, emit_json, fail, settings
from phi.errors import UserError
from phi.postgres import (
    DEFAULT_PORT,
    PostgresServerError,
    rotate_password,
    server_down,
    server_status,
    server_up,
)

__all__ = ["postgres_app"]

postgres_app = typer.Typer(
    help="A local PostgreSQL with pgvector on 127.0.0.1 (for PHI_MEMORY_URL), password only.",
    no_args_is_help=True,
)

DataDir = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        envvar="PHI_POSTGRES_DIR",
        help="Where the server keeps its data (default: $PHI_HOME/postgres); its passwords"
        " go beside it, in <data-dir>-auth/.",
    ),
]
Port = Annotated[
    int, typer.Option("--port", envvar="PHI_POSTGRES_PORT", help="TCP port on 127.0.0.1.")
]


def _data_dir(given: Path | None) -> Path:
    return given if given is not None else settings().home / "postgres"


@postgres_app.command("up")
def up(data_dir: DataDir = None, port: Port = DEFAULT_PORT, as_json: AsJson = False) -> None:
    """Start the server unless it runs; print its URL as the last line.

    The URL logs in as role `phi` (not a superuser) to database `phi`; its `passfile`
    (0600, readable by you alone) holds the password, so the URL itself holds none.
    """
    try:
        status = server_up(_data_dir(data_dir), port=port)
    except UserError as exc:
        fail(str(exc))
    except PostgresServerError as exc:
        fail(str(exc), code=1)
    notes = [said for said in (status.closed, status.restarted) if said is not None]
    if as_json:
        emit_json(
            {
                "running": True,
                "pid": status.pid,
                "data_dir": str(status.data_dir),
                "url": status.url,
                "notes": notes,
            }
        )
        return
    for said in notes:
        console.print(said, highlight=False, markup=False)
    console.print(f"PostgreSQL with pgvector runs (pid {status.pid}, data {status.data_dir})")
    print(status.url)


@postgres_app.command("down")
def down(data_dir: DataDir = None, as_json: AsJson = False) -> None:
    """Stop the server."""
    try:
        stopped = server_down(_data_dir(data_dir))
    except PostgresServerError as exc:
        fail(str(exc), code=1)
    if as_json:
        emit_json({"stopped": stopped})
        return
    console.print("stopped" if stopped else "not running")


@postgres_app.command("status")
def status(data_dir: DataDir = None, port: Port = DEFAULT_PORT, as_json: AsJson = False) -> None:
    """Whether the server runs; its URL as the last line when it does (exit 1 when not)."""
    state = server_status(_data_dir(data_dir), port=port)
    if as_json:
        emit_json(
            {
                "running": state.running,
                "pid": state.pid,
                "data_dir": str(state.data_dir),
                "url": state.url if state.running else None,
            }
        )
        if not state.running:
            raise typer.Exit(1)
        return
    if not state.running:
        console.print(f"not running (data {state.data_dir})")
        raise typer.Exit(1)
    console.print(f"running (pid {state.pid}, data {state.data_dir})")
    print(state.url)


@postgres_app.command("rotate-password")
def rotate(data_dir: DataDir = None, port: Port = DEFAULT_PORT, as_json: AsJson = False) -> None:
    """New passwords for role `phi` and the superuser; print the URL as the last line.

    The URL's password file is rewritten: the URL stays the same and works at once with the
    new password. Sessions already open stay open; restart phi's processes to drop them.
    """
    try:
        state = rotate_password(_data_dir(data_dir), port=port)
    except UserError as exc:
        fail(str(exc))
    except PostgresServerError as exc:
        fail(str(exc), code=1)
    if as_json:
        emit_json({"rotated": True, "data_dir": str(state.data_dir), "url": state.url})
        return
    console.print(f"new passwords set (data {state.data_dir})")
    print(state.url)
