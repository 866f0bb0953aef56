"""`phi memory migrate` and `phi memory import`: thin adapters over `phi.memory.transfer`."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn

from phi.cli._edge import (
    AsJson,
    Db,
    InSandbox,
    console,
    emit_json,
    err_console,
    fail,
    open_memory,
    plural,
    run,
)
from phi.cli.memory import memory_app

if TYPE_CHECKING:
    from phi.memory.transfer import ImportReport, MigrationReport
    from phi.memory.transfer import Progress as OnProgress

__all__ = ["import_command", "migrate_command"]


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[OnProgress]:
    """A rich progress bar on standard error, one line per step."""
    bar = Progress(
        TextColumn("{task.description:>14}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err_console,
        disable=not enabled,
    )
    tasks: dict[str, TaskID] = {}

    def update(step: str, done: int, total: int) -> None:
        if step not in tasks:
            tasks[step] = bar.add_task(step, total=total)
        bar.update(tasks[step], completed=done, total=total)

    with bar:
        yield update


@memory_app.command("migrate")
def migrate_command(
    source: Annotated[
        str, typer.Option("--from", help="The store to copy (a SQLite path or postgresql:// URL).")
    ],
    target: Annotated[
        str, typer.Option("--to", help="The store to copy into (empty, or an earlier run's).")
    ],
    as_json: AsJson = False,
) -> None:
    """Copy a whole memory between stores: rows with vectors, edges, history, learning
    state and the model-call log. Run it again after an interruption to finish the copy;
    counts are verified at the end."""
    from phi.memory.transfer import migrate

    if not source.startswith(("postgresql://", "postgres://")) and not Path(source).is_file():
        # A typo must not read as an empty memory copied successfully.
        fail(f"no memory store at {source!r} to migrate from (check the path)")

    async def go() -> MigrationReport:
        with _progress_bar(not as_json) as progress:
            return await migrate(source, target, progress=progress)

    report = run(go)
    if as_json:
        emit_json(
            {
                "source": report.source,
                "target": report.target,
                "copied": dataclasses.asdict(report.copied),
                "counts": dataclasses.asdict(report.target_counts),
                "seconds": round(report.seconds, 3),
            }
        )
        return
    counts, copied = report.target_counts, report.copied
    console.print(f"migrated {report.source} -> {report.target}", highlight=False)
    for field in dataclasses.fields(counts):
        name = field.name.replace("_", " ")
        total, new = getattr(counts, field.name), getattr(copied, field.name)
        console.print(f"  {name}: {total} (this run copied {new})", highlight=False)
    console.print("counts verified: the target holds what the source holds", highlight=False)
    rate = copied.rows / report.seconds if report.seconds > 0 else 0.0
    console.print(f"took {report.seconds:.1f} s ({rate:,.0f} rows/s copied)", highlight=False)


@memory_app.command("import")
def import_command(
    path: Annotated[
        str, typer.Argument(help="A file written by `phi memory export` ('-' reads stdin).")
    ],
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Write the rows of a `phi memory export` file into a store, re-embedding their text
    (an export has no vectors). Rows already there are left alone."""
    if path != "-" and not Path(path).is_file():
        fail(f"no such file: {path!r}")
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        fail(f"{path!r} is not UTF-8 text ({exc.reason} at byte {exc.start})")
    name = "<stdin>" if path == "-" else path

    from phi.memory.transfer import import_rows

    async def go() -> ImportReport:
        with _progress_bar(not as_json) as progress:
            async with open_memory(db, sandbox=sandbox, creates=True) as memory:
                return await import_rows(memory, text.splitlines(), name=name, progress=progress)

    report = run(go)
    if as_json:
        emit_json({"rows": report.rows, "written": report.written})
    else:
        console.print(
            f"imported {plural(report.rows, 'row')} ({report.written} new, "
            f"{report.rows - report.written} already there)",
            highlight=False,
        )
