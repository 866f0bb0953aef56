"""The store's vectors: `phi memory embed` embeds the rows that wait for theirs
(`Memory.embed_pending`); `phi memory reembed --to MODEL` moves a store to another
embedding model (`Memory.reembed`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from phi.cli._edge import console, emit_json, fail, note, open_memory, plural, run, settings
from phi.cli.memory import AsJson, Db, InSandbox, memory_app

if TYPE_CHECKING:
    from phi.memory import ReembedProgress, ReembedReport
    from phi.memory.embed import Embedder

__all__ = ["embed", "reembed"]


@memory_app.command("embed")
def embed(
    batch_size: Annotated[int, typer.Option(help="Rows embedded per batch.", min=1)] = 64,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Embed the rows waiting for their vector (stored with deferred embedding), oldest
    first, until none waits: search by meaning sees them from then on."""

    async def go() -> int:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.embed_pending(batch=batch_size)

    embedded = run(go)
    if as_json:
        emit_json({"embedded": embedded})
        return
    console.print(
        f"embedded {plural(embedded, 'row')}; none waits for its vector now", highlight=False
    )


def _target(to: str, url: str | None, dimensions: int | None) -> Embedder:
    from phi.errors import StoreError
    from phi.memory.embed import default_embedder

    current = settings()
    key = current.embedder_key.get_secret_value() if current.embedder_key else None
    try:
        return default_embedder(
            to,
            base_url=url or current.embedder_url,
            api_key=key,
            dimensions=dimensions or current.embedder_dimensions,
        )
    except StoreError as exc:
        fail(f"--to {to!r}: {exc}")


@memory_app.command("reembed")
def reembed(
    to: Annotated[str, typer.Option("--to", help="The new model: `minilm` or `openai:MODEL`.")],
    url: Annotated[
        str | None,
        typer.Option(help="Base URL (up to /v1) of an openai: model (default $PHI_EMBEDDER_URL)."),
    ] = None,
    dimensions: Annotated[
        int | None,
        typer.Option(help="Vector length of the new model (default $PHI_EMBEDDER_DIMENSIONS)."),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Rows embedded per batch.")] = 64,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Embed every row again with another model, swapping at the end (resumable).

    Open the store as it is (PHI_EMBEDDER is its current model); interrupted, the store keeps
    working with that model and a rerun continues. Afterwards set PHI_EMBEDDER to the new one.
    """
    target = _target(to, url, dimensions)

    def show(progress: ReembedProgress) -> None:
        note(f"{progress.done}/{progress.total} rows embedded with {target.name!r}")

    async def go() -> ReembedReport:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.reembed(target, batch_size=batch_size, progress=show)

    report = run(go)
    if as_json:
        emit_json(
            {
                "model": report.model,
                "dimension": report.dimension,
                "previous": report.previous,
                "rows": report.rows,
                "embedded": report.embedded,
                "seconds": round(report.seconds, 3),
            }
        )
        return
    console.print(
        f"moved {report.rows} rows from {report.previous!r} to {report.model!r}"
        f" ({report.dimension}-d; {report.embedded} embedded now) in {report.seconds:.1f} s;"
        f" now set PHI_EMBEDDER={to}",
        highlight=False,
        markup=False,
    )
