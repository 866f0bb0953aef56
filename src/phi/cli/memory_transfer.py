"""`phi memory migrate` and `phi memory import`: thin adapters over `phi.memory.transfer`."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Final

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
    from phi.memory.transfer import ImportReport, LeftBehind, MigrationReport
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
        if not tasks:
            # Started at the first step, not before: a refusal that comes first (a target
            # of other data) stays the one line it is, with no empty bar before it.
            bar.start()
        if step not in tasks:
            tasks[step] = bar.add_task(step, total=total)
        bar.update(tasks[step], completed=done, total=total)

    try:
        yield update
    finally:
        if tasks:
            bar.stop()


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
    counts are verified at the end. A target holding other data is refused before anything
    is copied. Rows an older phi stored with text no store can keep (a NUL character) are
    left behind with their edges, listed, and the command exits 1."""
    from phi.memory.transfer import migrate

    if not source.startswith(("postgresql://", "postgres://")) and not Path(source).is_file():
        # A typo must not read as an empty memory copied successfully.
        fail(f"no memory store at {source!r} to migrate from (check the path)")

    async def go() -> MigrationReport:
        with _progress_bar(not as_json) as progress:
            return await migrate(source, target, progress=progress)

    report = run(go)
    left = report.left_behind
    if as_json:
        emit_json(
            {
                "source": report.source,
                "target": report.target,
                "copied": dataclasses.asdict(report.copied),
                "counts": dataclasses.asdict(report.target_counts),
                "left_behind": {
                    "rows": [dataclasses.asdict(r) for r in left.rows],
                    "edges": [
                        {"src": e.src, "dst": e.dst, "edge_type": e.edge_type} for e in left.edges
                    ],
                    "marks": left.marks,
                    "state": [dataclasses.asdict(s) for s in left.state],
                },
                "seconds": round(report.seconds, 3),
            }
        )
    else:
        _print_migration(report)
    if left:
        # Not a success: a script must not drop the source believing the copy whole.
        err_console.print(
            f"[bold yellow]not copied:[/] {_left_summary(left)} hold text no store can keep"
            " (a NUL character, written by an older phi); the source still holds them,"
            " the target does not",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(1)


SHOWN: Final = 20
"""Rows left behind listed by the plain report (`--json` lists every one)."""


def _left_summary(left: LeftBehind) -> str:
    parts = [
        plural(len(left.rows), "row"),
        plural(len(left.edges), "edge"),
        plural(left.marks, "marker"),
    ]
    state = f"{plural(len(left.state), 'version')} of learning state"
    return f"{', '.join(parts)} and {state}"


def _print_migration(report: MigrationReport) -> None:
    counts, copied, left = report.target_counts, report.copied, report.left_behind
    console.print(f"migrated {report.source} -> {report.target}", highlight=False)
    for field in dataclasses.fields(counts):
        name = field.name.replace("_", " ")
        total, new = getattr(counts, field.name), getattr(copied, field.name)
        console.print(f"  {name}: {total} (this run copied {new})", highlight=False)
    if left:
        console.print(f"left behind: {_left_summary(left)}", highlight=False)
        lines = [f"  row {r.row_id} ({r.namespace}): {r.problem}" for r in left.rows]
        lines += [f"  state {s.scope!r} {s.key!r} v{s.version}: {s.problem}" for s in left.state]
        for line in lines[:SHOWN]:
            console.print(line, highlight=False, markup=False, soft_wrap=True)
        if len(lines) > SHOWN:
            console.print(f"  … and {len(lines) - SHOWN} more (--json lists every one)")
        console.print(
            "counts verified: the target holds what the source holds, less what was left behind",
            highlight=False,
        )
    else:
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
