"""`phi bench ...`: benchmarks of the memory engine."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from phi.bench.locomo import CATEGORIES, KS, LocomoResult, run_locomo
from phi.bench.peers import PEERS
from phi.cli._edge import console, fail, run
from phi.errors import InvalidInput

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
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Write a chart of R@10 by category beside the peers."),
    ] = None,
    stores: Annotated[
        Path | None,
        typer.Option("--stores", help="Keep each conversation's store here and reuse it."),
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
        return await run_locomo(
            data, samples=sample or (), k=max(k, 20), out=out, store_dir=stores, db=db
        )

    result = run(go)
    print_locomo(result)
    print_peers()
    if out is not None:
        console.print(f"wrote {len(result.questions)} lines to {out}")
    if plot is not None:
        from phi.bench.plot import plot_locomo  # matplotlib is a development dependency

        try:
            plot_locomo(result, plot)
        except InvalidInput as exc:
            fail(str(exc))
        console.print(f"wrote a chart to {plot}")


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


def print_peers() -> None:
    """Other methods measured here the same way (turn recall, categories 1-4, no LLM)."""
    table = Table(title="Peers on LoCoMo, measured here (dev: comparable with the table above)")
    table.add_column("method")
    table.add_column("split")
    for k in KS:
        table.add_column(f"R@{k}", justify="right")
    for peer in PEERS:
        cells = ("-" if v is None else f"{v:.3f}" for v in peer.recall)
        table.add_row(peer.method, peer.split, *cells)
    console.print(table)
