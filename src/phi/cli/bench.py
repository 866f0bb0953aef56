"""`phi bench ...`: benchmarks of the memory engine."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from phi.cli._edge import AsJson, console, emit_json, fail, note, run

if TYPE_CHECKING:
    from phi.bench.locomo import LocomoResult

bench_app = typer.Typer(help="Benchmarks of the memory engine.", no_args_is_help=True)


@bench_app.command("locomo")
def locomo(
    data: Annotated[Path, typer.Argument(help="A LoCoMo JSON file (e.g. locomo-dev.json).")],
    sample: Annotated[
        list[str] | None, typer.Option("--sample", help="Only this conversation (repeatable).")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="Length of each ranking (at least 20).")] = 20,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write one JSON line per question to this file."),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Retrieval quality on LoCoMo: recall@1/5/10/20 through phi's own write and recall path."""
    from phi.bench.locomo import CATEGORIES, KS, run_locomo

    if not data.is_file():
        fail(f"no LoCoMo file at {str(data)!r}")
    if output is not None and not output.parent.is_dir():
        fail(f"cannot write {str(output)!r}: the folder {str(output.parent)!r} does not exist")

    async def go() -> LocomoResult:
        return await run_locomo(data, samples=sample or (), k=max(k, 20), out=output, progress=note)

    result = run(go)
    if as_json:
        emit_json(
            {
                "questions": len(result.questions),
                "turns": result.turns,
                "ingest_seconds": result.ingest_seconds,
                "recall": {
                    "all": {f"R@{k}": _number(result.recall(k)) for k in KS},
                    **{
                        str(category): {f"R@{k}": _number(result.recall(k, category)) for k in KS}
                        for category in CATEGORIES
                    },
                },
                "latency_ms": {
                    "p50": _number(result.latency_ms(0.5)),
                    "p95": _number(result.latency_ms(0.95)),
                },
                "output": str(output) if output else None,
            }
        )
        return
    print_locomo(result)
    if output is not None:
        console.print(f"wrote {len(result.questions)} lines to {output}", highlight=False)


def _number(value: float) -> float | None:
    """JSON has no NaN: an empty category's recall is null."""
    return None if math.isnan(value) else value


def print_locomo(result: LocomoResult) -> None:
    """The recall table, ingest rate and recall latency."""
    from rich.table import Table

    from phi.bench.locomo import CATEGORIES, KS

    table = Table(title=f"LoCoMo retrieval ({len(result.questions)} questions, categories 1-4)")
    table.add_column("category")
    table.add_column("questions", justify="right")
    for k in KS:
        table.add_column(f"R@{k}", justify="right")
    for category, name in CATEGORIES.items():
        count = sum(1 for q in result.questions if q.category == category)
        table.add_row(
            f"{category} {name}", str(count), *(f"{result.recall(k, category):.3f}" for k in KS)
        )
    table.add_row(
        "all", str(len(result.questions)), *(f"{result.recall(k):.3f}" for k in KS), style="bold"
    )
    console.print(table)
    rate = result.turns / result.ingest_seconds if result.ingest_seconds else float("nan")
    console.print(
        f"ingest: {result.turns} turns in {result.ingest_seconds:.1f} s ({rate:.0f} turns/s, "
        f"embedding included); recall latency p50 {result.latency_ms(0.5):.1f} ms, "
        f"p95 {result.latency_ms(0.95):.1f} ms (query embedding included)"
    )
