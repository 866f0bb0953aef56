"""Helpers every CLI command shares: settings, opening memory, errors, output.

Heavy libraries (onnxruntime, the store, pydantic-ai, the AT Protocol SDK, FastAPI, MCP)
are imported inside the commands that need them, never at module level: `phi --help` and
a mistyped option answer at once (`tests/test_cli.py` checks what `import phi.cli` loads).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console

from phi.errors import PhiError, UserError

if TYPE_CHECKING:
    from rich.table import Table

    from phi.config import Settings
    from phi.memory import Memory

T = TypeVar("T")

# Not wrapped by rich: ids, paths and URLs are copied from these lines whole.
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)

Db = Annotated[
    str | None, typer.Option("--db", help="Memory store (default: $PHI_HOME/memory.db).")
]
InSandbox = Annotated[
    bool,
    typer.Option(
        "--sandbox", help="The memory of `phi sandbox run` ($PHI_HOME/sandbox-memory.db)."
    ),
]
AsJson = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
Yes = Annotated[bool, typer.Option("--yes", help="Erase without asking.")]


def fail(message: str, *, code: int = 2) -> NoReturn:
    """Print a one-line error and exit."""
    err_console.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def note(message: str) -> None:
    """A one-line remark on standard error, out of the way of output scripts read."""
    err_console.print(f"note: {message}", highlight=False, soft_wrap=True, markup=False)


def settings() -> Settings:
    """The settings from `PHI_*` and `.env`; a bad value is a one-line error (exit 2)."""
    from phi.config import load_settings

    try:
        return load_settings()
    except UserError as exc:  # a bad value, or a `.env` with a secret others can read
        fail(str(exc))


def run(fn: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine at the edge, mapping phi's errors to a message and an exit code."""
    import anyio

    try:
        return anyio.run(fn)
    except UserError as exc:
        fail(str(exc), code=2)
    except PhiError as exc:
        fail(str(exc), code=1)
    except BaseExceptionGroup as group:
        # A task group wraps what its tasks raise: phi's own error inside one is still a
        # one-line message, not a traceback of the group.
        leaf = _phi_error_in(group)
        if leaf is None:
            raise
        fail(str(leaf), code=2 if isinstance(leaf, UserError) else 1)


def _phi_error_in(group: BaseExceptionGroup[BaseException]) -> PhiError | None:
    """The first `UserError` (else `PhiError`) of a group whose leaves are all phi's errors
    (or the cancellations they caused); None when anything else failed too."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        current = pending.pop()
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        else:
            leaves.append(current)
    errors = [leaf for leaf in leaves if isinstance(leaf, PhiError)]
    if not errors or len(errors) != len(leaves):
        return None
    return next((e for e in errors if isinstance(e, UserError)), errors[0])


def memory_location(db: str | None, *, sandbox: bool = False) -> str:
    """Where the memory named by `--db` / `--sandbox` lives (the configured default without)."""
    if db is not None and sandbox:
        fail("give --db or --sandbox, not both")
    current = settings()
    if sandbox:
        return current.sandbox_memory_url()
    return db or current.resolved_memory_url()


def shown_location(location: str) -> str:
    """A store location fit to print: a URL loses its password and secret query values."""
    from phi.redact import redact_url

    return redact_url(location) if "://" in location else location


def open_memory(db: str | None, *, sandbox: bool = False, creates: bool = False) -> Memory:
    """The memory store named by `--db` or `--sandbox`, or the configured default.

    A `--db` path that does not exist is most often a typo: commands that only read refuse
    it (exit 2), commands that write (`creates`) make the store and say so.
    """
    from phi.memory import Memory

    location = memory_location(db, sandbox=sandbox)
    path = _file_of(location)
    if path is not None:
        if path.is_dir():
            fail(f"{location!r} is a directory; give the path of a memory store file")
        if not path.exists():
            if sandbox:
                fail(f"no sandbox memory yet at {location!r}; `phi sandbox run` makes it")
            if db is not None and not creates:
                fail(
                    f"no memory store at {location!r} (check the path; `phi memory add … "
                    "--db PATH` creates one)"
                )
            if db is not None:
                note(f"created a new, empty memory store at {location}")
    from phi.config import SettingsError

    current = settings()
    try:
        embedder = current.make_embedder()
    except SettingsError as exc:
        fail(str(exc))
    return Memory.open(
        location,
        embedder=embedder,
        auto_upgrade=current.auto_upgrade,
        pool_max=current.postgres_pool_max,
    )


def _file_of(location: str) -> Path | None:
    """The file a SQLite location names; None for a URL of another backend."""
    if location.startswith("sqlite://"):
        return Path(location.removeprefix("sqlite://")).expanduser()
    return None if "://" in location else Path(location).expanduser()


def confirm_erase(what: str, *, yes: bool) -> None:
    """The one confirmation of every destructive command: `--yes`, or a yes at a terminal.

    Without a terminal to ask (a script, a pipe) the command refuses and says how to
    confirm, so nothing is erased by accident.
    """
    if yes:
        return
    if not sys.stdin.isatty():
        fail(f"this erases {what} for good; add --yes to confirm")
    if not typer.confirm(f"erase {what}? this cannot be undone"):
        fail("nothing erased", code=1)


def plural(count: int, noun: str) -> str:
    """`1 row`, `2 rows`."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


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


def show_table(table: Table) -> None:
    """Print a rich table whose cells fold at the terminal's width (80 columns in a pipe)
    instead of ending in an ellipsis: ids, namespaces and paths in it are copied whole."""
    for column in table.columns:
        column.overflow = "fold"
    console.print(table)


def emit_json(value: Any) -> None:
    """Write JSON for scripts to standard output."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
