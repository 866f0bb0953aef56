"""`phi memory settle | cluster`: thin adapters over `phi.memory.upkeep`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from phi.cli._edge import AsJson, Db, console, emit_json, memory_location, plural, run
from phi.cli.memory import memory_app

if TYPE_CHECKING:
    from phi.memory.upkeep import UpkeepReport

__all__ = ["cluster_command", "settle_command"]


def _show(report: UpkeepReport, *, as_json: bool, done: str, nothing: str) -> None:
    if as_json:
        emit_json(
            {
                "location": report.location,
                "applies": report.applies,
                "settled": report.settled,
                "seconds": round(report.seconds, 3),
            }
        )
    elif report.applies:
        console.print(f"{report.location}: {done} in {report.seconds:.1f} s", highlight=False)
    else:
        console.print(f"{report.location}: {nothing}", highlight=False)


@memory_app.command("settle")
def settle_command(
    batch: Annotated[int, typer.Option(help="Vectors per transaction.", min=1)] = 1000,
    db: Db = None,
    as_json: AsJson = False,
) -> None:
    """Put a PostgreSQL store's newly written vectors into its HNSW graph, while phi runs
    and writes. Writes leave them out of the graph so they never wait for it; a wide
    (unscoped) search scans those exactly until they settle. Schedule it after bursts of
    writes (each write settles some itself once more than 5,000 wait)."""
    from phi.memory.upkeep import settle

    location = memory_location(db)

    async def go() -> UpkeepReport:
        return await settle(location, batch=batch)

    report = run(go)
    _show(
        report,
        as_json=as_json,
        done=f"settled {plural(report.settled, 'vector')} into the search graph",
        nothing="a SQLite store searches its vectors exactly: nothing to settle",
    )


@memory_app.command("cluster")
def cluster_command(db: Db = None, as_json: AsJson = False) -> None:
    """Rewrite a PostgreSQL store's rows and vectors in namespace order, so a scoped search
    reads few pages again after many writes, and vacuum them. Each table is locked while
    it is rewritten (the store's other sessions wait): run it when the store is quiet."""
    from phi.memory.upkeep import cluster

    location = memory_location(db)

    async def go() -> UpkeepReport:
        return await cluster(location)

    report = run(go)
    _show(
        report,
        as_json=as_json,
        done="rows and vectors rewritten in namespace order",
        nothing="a SQLite store keeps no namespace layout: nothing to cluster",
    )
