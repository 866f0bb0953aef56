"""`phi bench ...`: benchmarks of the memory engine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from phi.bench.locomo import CATEGORIES, KS, LocomoResult, run_locomo
from phi.cli._edge import console, run

bench_app = typer.Typer(help="Benchmarks of the memory engine.", no_args_is_help=True)


@bench_app.command("locomo")
def locomo(
    data: Annotated[Path, typer.Argument(help="A LoCoMo JSON file (e.g. locomo-dev.json).")],
    sample: Annotated[
        list[str] | None, typer.Option("--sample", help="Only this conversation (repeatable).")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="Length of each ranking (at least 20).")] = 20,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write one JSON line per question.")
    ] = None,
    db: Annotated[
        str | None,
        typer.Option(
            "--db", help="A postgresql:// URL: run on PostgreSQL (default: temporary SQLite files)."
        ),
    ] = None,
) -> None:
    """Retrieval quality on LoCoMo: recall@1/5/10/20 through phi's own write and recall path."""

    async def go() -> LocomoResult:
        return await run_locomo(data, samples=sample or (), k=max(k, 20), out=out, db=db)

    result = run(go)
    print_locomo(result)
    if out is not None:
        console.print(f"wrote {len(result.questions)} lines to {out}")


def print_locomo(result: LocomoResult) -> None:
    """The recall table, ingest rate and recall latency."""
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
