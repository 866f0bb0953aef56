"""`phi bench ...`: benchmarks of the memory engine."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from phi.cli._edge import AsJson, console, emit_json, fail, note, run, show_table

if TYPE_CHECKING:
    from phi.bench.locomo import LocomoResult

err_console = Console(stderr=True)
bench_app = typer.Typer(help="Benchmarks of the memory engine and the brain.", no_args_is_help=True)


@bench_app.command("brain")
def brain(
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            help="A PHI_MODEL value to bench (repeatable; default: the "
            "bundled model's candidate settings).",
        ),
    ] = None,
    cases: Annotated[int, typer.Option("--cases", help="Only the first N cases.", min=1)] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per brain.")] = False,
) -> None:
    """Twenty fixed batches through a brain: valid tool calls, degenerate replies, speed."""
    from rich.table import Table

    from phi.bench.brain import CANDIDATES, BrainSetup, CaseRun, run_brain_bench, setup_for
    from phi.bench.brain_cases import CASES

    setups = [setup_for(spec) for spec in model] if model else list(CANDIDATES)

    def progress(setup: BrainSetup, case: CaseRun) -> None:
        bad = f" [{case.degenerate.reason}]" if case.degenerate else ""
        err_console.print(
            f"{setup.name} · {case.case}: {case.seconds:.1f} s {case.decision[:90]}{bad}",
            markup=False,
            highlight=False,
        )

    results = run(lambda: run_brain_bench(setups, cases=CASES[:cases], on_case=progress))
    if as_json:
        emit_json(
            [
                {
                    "model": r.model,
                    "runs": r.runs,
                    "valid_tool_calls": round(r.valid_tool_calls, 3),
                    "degenerate": r.degenerate,
                    "rescued": r.rescued,
                    "median_s": round(r.median_s, 2),
                    "p95_s": round(r.p95_s, 2),
                    "tokens_per_s": round(r.tokens_per_s, 1),
                    "prompt_tokens": r.prompt_tokens,
                    **({"default": True} if r.default else {}),
                }
                for r in results
            ]
        )
        return
    table = Table(title=f"phi bench brain ({len(CASES[:cases])} batches)")
    for column in (
        "brain",
        "valid tool calls",
        "degenerate (rescued)",
        "median s",
        "p95 s",
        "tokens/s",
        "prompt tokens",
    ):
        table.add_column(column, justify="left" if column == "brain" else "right")
    for r in results:
        table.add_row(
            r.model + (" (default)" if r.default else ""),
            f"{r.valid_tool_calls:.0%}",
            f"{r.degenerate} ({r.rescued})",
            f"{r.median_s:.2f}",
            f"{r.p95_s:.2f}",
            f"{r.tokens_per_s:.0f}",
            str(r.prompt_tokens),
        )
    show_table(table)
    console.print(
        "degenerate replies are never posted: the guard refuses them (rescued: the "
        "retry wrote one that may be)",
        highlight=False,
    )


@bench_app.command("locomo")
def locomo(
    data: Annotated[
        Path | None,
        typer.Argument(
            help="A LoCoMo JSON file (default: the development split in data/locomo/).",
            show_default=False,
        ),
    ] = None,
    sample: Annotated[
        list[str] | None, typer.Option("--sample", help="Only this conversation (repeatable).")
    ] = None,
    k: Annotated[int, typer.Option("--k", help="Length of each ranking (at least 20).")] = 20,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write one JSON line per question to this file."),
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
    as_json: AsJson = False,
) -> None:
    """Retrieval quality on LoCoMo: recall@1/5/10/20 through phi's own write and recall path."""
    from phi.bench.locomo import CATEGORIES, DEV_SPLIT, KS, run_locomo

    data = data if data is not None else DEV_SPLIT
    if not data.is_file():
        fail(f"no LoCoMo file at {str(data)!r}")
    if output is not None and not output.parent.is_dir():
        fail(f"cannot write {str(output)!r}: the folder {str(output.parent)!r} does not exist")

    async def go() -> LocomoResult:
        return await run_locomo(
            data,
            samples=sample or (),
            k=max(k, 20),
            out=output,
            store_dir=stores,
            db=db,
            progress=note,
        )

    result = run(go)
    if plot is not None:
        from phi.bench.plot import plot_locomo  # matplotlib is a development dependency
        from phi.errors import InvalidInput

        try:
            plot_locomo(result, plot)
        except InvalidInput as exc:
            fail(str(exc))
        # On standard error: beside --json, standard output is the JSON alone.
        note(f"wrote a chart to {plot}")
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
                "plot": str(plot) if plot else None,
            }
        )
        return
    print_locomo(result)
    print_peers()
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
    show_table(table)
    ingest = (
        f"ingest: {result.turns} turns in {result.ingest_seconds:.1f} s "
        f"({result.turns / result.ingest_seconds:.0f} turns/s, embedding included)"
        if result.turns and result.ingest_seconds
        else "ingest: none (every conversation was in its kept store)"
    )
    console.print(
        f"{ingest}; recall latency p50 {result.latency_ms(0.5):.1f} ms, "
        f"p95 {result.latency_ms(0.95):.1f} ms (query embedding included)"
    )


def print_peers() -> None:
    """Other methods measured here the same way (turn recall, categories 1-4, no LLM)."""
    from rich.table import Table

    from phi.bench.locomo import KS
    from phi.bench.peers import PEERS

    table = Table(title="Peers on LoCoMo, measured here (dev: comparable with the table above)")
    table.add_column("method")
    table.add_column("split")
    for k in KS:
        table.add_column(f"R@{k}", justify="right")
    for peer in PEERS:
        cells = ("-" if v is None else f"{v:.3f}" for v in peer.recall)
        table.add_row(peer.method, peer.split, *cells)
    show_table(table)
