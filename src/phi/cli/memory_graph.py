"""`phi memory walk | link`: the memory graph on the command line (`Memory.walk`, `.link`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Final

import typer

from phi.cli._edge import console, emit_json, fail, open_memory, run
from phi.cli.memory import AsJson, Db, InSandbox, memory_app

if TYPE_CHECKING:
    from phi.memory import Edge, EdgeType, Step

__all__ = ["link", "walk"]

EDGE_TYPES: Final[tuple[EdgeType, ...]] = (
    "temporal",
    "semantic",
    "reference",
    "causal",
    "supersedes",
)
"""`phi.memory.model.EDGE_TYPES`, spelled out: importing `phi.memory` loads the store and
numpy, which `phi --help` must not wait for (`tests/test_cli.py`; a test keeps the two equal)."""

EdgeTypes = Annotated[
    list[str] | None,
    typer.Option(
        "--type",
        "-t",
        help="Only edges of this type (repeatable): temporal, semantic, reference, causal, "
        "supersedes.",
    ),
]


def _edge_types(values: list[str] | None) -> list[EdgeType] | None:
    from phi.memory.model import EDGE_TYPES

    if not values:
        return None
    bad = [v for v in values if v not in EDGE_TYPES]
    if bad:
        fail(f"unknown edge type {bad[0]!r}; expected one of {', '.join(EDGE_TYPES)}")
    return [t for t in EDGE_TYPES if t in values]


@memory_app.command("walk")
def walk(
    row_id: Annotated[str, typer.Argument(help="The row to start from.")],
    depth: Annotated[int, typer.Option(help="Hops to follow (1-3).")] = 2,
    edge_type: EdgeTypes = None,
    limit: Annotated[int, typer.Option(help="At most this many rows.")] = 100,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """The rows linked to ROW_ID within DEPTH hops, nearest first (one namespace)."""
    types = _edge_types(edge_type)

    async def go() -> list[Step]:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.walk(row_id, depth=depth, types=types, limit=limit)

    steps = run(go)
    if as_json:
        from phi.memory.serial import to_json

        emit_json({"row_id": row_id, "steps": to_json(steps)})
        return
    if not steps:
        console.print("no linked rows")
    for step in steps:
        console.print(
            f"{'  ' * step.depth}~{step.edge.edge_type} ({step.edge.weight:.2f}) "
            f"{step.row.row_id}: {step.row.content[:100]}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


@memory_app.command("link")
def link(
    src: Annotated[str, typer.Argument(help="Row the edge starts from (e.g. the cause).")],
    dst: Annotated[str, typer.Argument(help="Row the edge points to (e.g. the effect).")],
    edge_type: Annotated[str, typer.Option("--type", "-t", help="Edge type.")] = "causal",
    weight: Annotated[float, typer.Option(help="Edge weight in (0, 1].")] = 1.0,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Add an edge between two rows of one namespace."""
    (checked,) = _edge_types([edge_type]) or ["causal"]

    async def go() -> Edge:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.link(src, dst, edge_type=checked, weight=weight)

    edge = run(go)
    if as_json:
        from phi.memory.serial import to_json

        emit_json(to_json(edge))
        return
    console.print(
        f"linked {edge.src} -{edge.edge_type}-> {edge.dst}", highlight=False, soft_wrap=True
    )
