"""`phi memory forget --row ID`: a thin adapter over `Memory.forget_row`."""

from __future__ import annotations

from phi.cli._edge import confirm_erase, console, emit_json, open_memory, plural, run
from phi.memory import RowForgetReport

__all__ = ["forget_row", "print_row_report"]


def forget_row(row_id: str, *, yes: bool, db: str | None, sandbox: bool, as_json: bool) -> None:
    """Erase one row and what was made from it alone; print what went."""
    confirm_erase(f"row {row_id!r} and the rows made from it alone", yes=yes)

    async def go() -> RowForgetReport:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.forget_row(row_id)

    report = run(go)
    if as_json:
        emit_json(report.to_json())
    else:
        print_row_report(report)


def print_row_report(report: RowForgetReport) -> None:
    kinds = ", ".join(f"{n} {k}" for k, n in report.kinds.items())
    console.print(
        f"erased row {report.row_id}: {plural(len(report.erased), 'row')} ({kinds}) and "
        f"{plural(report.edges, 'edge')}",
        highlight=False,
        markup=False,
    )
    if report.derived:
        console.print("  made from it alone:", highlight=False)
        for row_id in report.derived:
            console.print(f"    {row_id}", highlight=False, markup=False)
    if report.reinstated:
        console.print("  current again (it had superseded them):", highlight=False)
        for row_id in report.reinstated:
            console.print(f"    {row_id}", highlight=False, markup=False)
    if report.published:
        console.print(
            "  still on phi's PDS, published from erased rows; delete them yourself:",
            highlight=False,
        )
        for uri in report.published:
            console.print(f"    {uri}", highlight=False, markup=False)
