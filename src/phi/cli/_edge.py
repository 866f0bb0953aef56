"""Helpers every CLI command shares: settings, opening memory, errors, output."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

import anyio
import typer
from rich.console import Console

from phi.config import Settings
from phi.errors import PhiError, UserError
from phi.memory import Memory
from phi.memory.embed import default_embedder

T = TypeVar("T")

console = Console()
err_console = Console(stderr=True)


def fail(message: str, *, code: int = 2) -> NoReturn:
    """Print a one-line error and exit."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def run(fn: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine at the edge, mapping phi's errors to a message and an exit code."""
    try:
        return anyio.run(fn)
    except UserError as exc:
        fail(str(exc), code=2)
    except PhiError as exc:
        fail(str(exc), code=1)


def open_memory(db: str | None) -> Memory:
    """The memory store named by `--db`, or the configured default."""
    settings = Settings()
    return Memory.open(
        db or settings.resolved_memory_url(), embedder=default_embedder(settings.embedder)
    )


def read_text(value: str) -> str:
    """The argument itself, or standard input when it is `-`."""
    return sys.stdin.read() if value == "-" else value


def parse_time(value: str | None, option: str) -> datetime | None:
    """An ISO 8601 date or datetime; naive values are taken as UTC."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        fail(f"{option} {value!r} is not an ISO 8601 date or datetime (e.g. 2026-11-01)")
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def emit_json(value: Any) -> None:
    """Write JSON for scripts to standard output."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
