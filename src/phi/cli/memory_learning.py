"""`phi memory extract | review | summarize | synthesize | history | blocks | usage`: the
learning passes on the command line, each a thin adapter over one `phi.memory.learning`
call. Commands that write take `--dry-run`, which shows the decisions and writes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from phi.cli._edge import (
    AsJson,
    Db,
    InSandbox,
    Yes,
    confirm_erase,
    console,
    emit_json,
    fail,
    open_memory,
    plural,
    run,
    settings,
)
from phi.cli.memory import memory_app

if TYPE_CHECKING:
    from pydantic_ai.models import Model

    from phi.memory import Memory, Row
    from phi.memory.learning import Block, Blocks, SmallModel
    from phi.memory.learning.extract import ExtractReport
    from phi.memory.learning.review import ReviewOutcome

T = TypeVar("T")

DryRun = Annotated[bool, typer.Option("--dry-run", help="Show the decisions; write nothing.")]
OneNamespace = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="One person's namespace (default: every phi-users-*)."),
]

blocks_app = typer.Typer(help="Core and per-user blocks (limit 5000 characters each).")
memory_app.add_typer(blocks_app, name="blocks")


def resolve_model() -> Model:
    """The model of memory's small passes, from `PHI_MEMORY_MODEL` (exit 2 when unset),
    resolved as the runtime resolves it (`local` is the bundled SmolLM2)."""
    from phi import llm
    from phi.errors import UserError as PhiUserError

    name = settings().memory_model
    if not name:
        fail(
            "no language model for memory's learning passes: set PHI_MEMORY_MODEL to a "
            "pydantic-ai model string (e.g. 'anthropic:claude-haiku-4-5') or 'local'"
        )
    try:
        return llm.resolve_model(name)
    except PhiUserError as exc:
        fail(f"PHI_MEMORY_MODEL {name!r} cannot be used: {exc}")


def with_model(
    db: str | None, sandbox: bool, fn: Callable[[Memory, SmallModel], Awaitable[T]]
) -> T:
    """Resolve the model, open memory, and run one pass."""
    from phi.memory.learning import SmallModel

    model = resolve_model()

    async def go() -> T:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await fn(memory, SmallModel(model=model, memory=memory))

    return run(go)


def _print_extract(report: ExtractReport) -> None:
    prefix = "[dry run] " if report.dry_run else ""
    counts = ", ".join(f"{n} {a}" for a, n in sorted(report.counts().items())) or "no decisions"
    console.print(
        f"{prefix}{report.interactions} interactions, {report.proposals} proposals: {counts}",
        highlight=False,
        markup=False,
    )
    for d in report.decisions:
        target = f" -> {d.target.content!r} ({d.target.row_id})" if d.target else ""
        console.print(
            f"  {d.action:<6} [{d.decided_by}] {d.proposal.content!r}{target}",
            highlight=False,
            markup=False,
        )
    for claim in report.ungrounded:
        console.print(f"  DROPPED (not in the person's words) {claim!r}", markup=False)
    if report.failed:
        console.print(f"  {len(report.failed)} interactions left for the next pass (no answer)")


@memory_app.command("extract")
def extract_command(
    namespace: OneNamespace = None,
    limit: Annotated[int, typer.Option(help="Most interactions per namespace.")] = 200,
    batch: Annotated[int, typer.Option(help="Interactions per extraction call.")] = 20,
    dry_run: DryRun = False,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Learn observations from unprocessed interactions (extraction + reconciliation)."""
    from phi.memory.learning import extract

    report = with_model(
        db,
        sandbox,
        lambda memory, model: extract(
            memory, model, namespace=namespace, limit=limit, batch_size=batch, dry_run=dry_run
        ),
    )
    emit_json(report.to_json()) if as_json else _print_extract(report)


def _print_review(outcomes: list[ReviewOutcome], dry_run: bool) -> None:
    prefix = "[dry run] " if dry_run else ""
    console.print(f"{prefix}{len(outcomes)} observations reviewed", highlight=False, markup=False)
    for o in outcomes:
        extra = f" -> {o.text!r}" if o.text else ""
        console.print(
            f"  {o.verdict:<9} {o.row.content!r}{extra}  ({o.row.row_id})",
            highlight=False,
            markup=False,
        )


@memory_app.command("review")
def review_command(
    namespace: OneNamespace = None,
    recent: Annotated[int, typer.Option(help="Newest observations per person.")] = 20,
    dry_run: DryRun = False,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Dream/distill: keep, supersede or promote recent observations."""
    from phi.memory.learning import review

    outcomes = with_model(
        db,
        sandbox,
        lambda memory, model: review(
            memory, model, namespace=namespace, recent=recent, dry_run=dry_run
        ),
    )
    if as_json:
        emit_json([o.to_json() for o in outcomes])
    else:
        _print_review(outcomes, dry_run)


@memory_app.command("summarize")
def summarize_command(
    namespace: OneNamespace = None,
    min_new: Annotated[int, typer.Option(help="New exchanges needed for a refresh.")] = 5,
    dry_run: DryRun = False,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Refresh relationship summaries where enough new exchanges arrived."""
    from phi.memory.learning import refresh_summaries

    reports = with_model(
        db,
        sandbox,
        lambda memory, model: refresh_summaries(
            memory, model, namespace=namespace, min_new=min_new, dry_run=dry_run
        ),
    )
    if as_json:
        emit_json([r.to_json() for r in reports])
        return
    prefix = "[dry run] " if dry_run else ""
    for r in reports:
        state = "refreshed" if r.refreshed else "not refreshed"
        console.print(
            f"{prefix}{r.namespace}: {state} ({r.new_exchanges} new exchanges)",
            highlight=False,
            markup=False,
        )
        if r.text:
            console.print(f"  {r.text}", highlight=False, markup=False)


@memory_app.command("synthesize")
def synthesize_command(
    query: Annotated[str, typer.Argument(help="What the block is for.")],
    goal: Annotated[list[str] | None, typer.Option("--goal", help="phi's goal (repeat).")] = None,
    limit: Annotated[int, typer.Option(help="Episodic candidates.")] = 8,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """One coherent block from phi's episodic notes about QUERY (cached per signature)."""
    from phi.memory.learning import synthesize_episodic

    found = with_model(
        db,
        sandbox,
        lambda memory, model: synthesize_episodic(
            memory, model, query, goals=goal or (), limit=limit
        ),
    )
    if as_json:
        emit_json(found.to_json())
    else:
        console.print(found.text or "no relevant notes", highlight=False, markup=False)


@memory_app.command("history")
def history_command(
    row_id: Annotated[str, typer.Argument(help="Any row of the chain.")],
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """What phi believed and when: a row's supersession chain, oldest first, with sources."""

    async def go() -> list[Row]:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await memory.history(row_id)

    chain = run(go)
    if as_json:
        emit_json([r.to_json() for r in chain])
        return
    for row in chain:
        mark = "*" if row.row_id == row_id else " "
        console.print(
            f"{mark} {row.created_at:%Y-%m-%d %H:%M} [{row.status}] {row.content}",
            highlight=False,
            markup=False,
        )
        console.print(f"    id {row.row_id}", highlight=False, markup=False)
        if row.written_by:  # through `phi mcp --http`: whose token wrote it
            console.print(f"    written by {row.written_by}", highlight=False, markup=False)
        for uri in row.source_uris:
            console.print(f"    source {uri}", highlight=False, markup=False)


@memory_app.command("usage")
def usage_command(db: Db = None, sandbox: InSandbox = False, as_json: AsJson = False) -> None:
    """Language-model calls and tokens per learning pass."""
    from phi.memory.learning import model_usage

    async def go() -> list[Any]:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await model_usage(memory)

    totals = run(go)
    if as_json:
        emit_json([vars(t) for t in totals])
        return
    if not totals:
        console.print("no model calls yet")
    for t in totals:
        console.print(
            f"{t.purpose:<11} {t.calls} calls, {t.requests} requests, "
            f"{t.input_tokens} in / {t.output_tokens} out tokens, {t.failures} unusable",
            highlight=False,
        )


def _block_command(
    db: str | None,
    sandbox: bool,
    as_json: bool,
    fn: Callable[[Blocks], Awaitable[Block]],
    dry_run: bool,
    *,
    writes: bool,
) -> None:
    from phi.memory.learning import Blocks

    async def go() -> Block:
        async with open_memory(db, sandbox=sandbox, creates=writes and not dry_run) as memory:
            return await fn(Blocks(memory=memory))

    block = run(go)
    if as_json:
        emit_json({**block.to_json(), "dry_run": dry_run})
        return
    if dry_run:
        console.print("[dry run] not written", highlight=False, markup=False)
    console.print(block.render(), highlight=False, markup=False)


Label = Annotated[str, typer.Argument(help="persona, zeitgeist, humans or user:<did>.")]


@blocks_app.command("view")
def blocks_view(
    label: Label, db: Db = None, sandbox: InSandbox = False, as_json: AsJson = False
) -> None:
    """Show a block."""
    _block_command(db, sandbox, as_json, lambda blocks: blocks.view(label), False, writes=False)


@blocks_app.command("history")
def blocks_history(
    label: Label,
    limit: Annotated[int, typer.Option(min=1, max=20, help="Versions to show.")] = 20,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """A block's kept versions (the last 20 writes), newest first."""
    from phi.memory.learning import Blocks

    async def go() -> list[Block]:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await Blocks(memory=memory).history(label, limit=limit)

    versions = run(go)
    if as_json:
        emit_json([b.to_json() for b in versions])
        return
    if not versions:
        console.print(f"block {label!r} was never written", highlight=False, markup=False)
    for b in versions:
        written = f"{b.updated_at:%Y-%m-%d %H:%M} UTC" if b.updated_at else "?"
        console.print(
            f"v{b.version}  {written}  {len(b.content)}/{b.limit} chars\n{b.content}\n",
            highlight=False,
            markup=False,
        )


@blocks_app.command("list")
def blocks_list(db: Db = None, sandbox: InSandbox = False, as_json: AsJson = False) -> None:
    """Every block: the core ones and each written user block."""
    from phi.memory.learning import Blocks

    async def go() -> list[Block]:
        async with open_memory(db, sandbox=sandbox) as memory:
            blocks = Blocks(memory=memory)
            return [await blocks.view(label) for label in await blocks.labels()]

    found = run(go)
    if as_json:
        emit_json([b.to_json() for b in found])
        return
    for b in found:
        console.print(f"{b.label:<40} {len(b.content)}/{b.limit} chars  v{b.version}")


@blocks_app.command("set")
def blocks_set(
    label: Label,
    text: Annotated[str, typer.Argument(help="The whole new content.")],
    dry_run: DryRun = False,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Replace a block's whole content."""
    _block_command(
        db, sandbox, as_json, lambda b: b.set(label, text, dry_run=dry_run), dry_run, writes=True
    )


@blocks_app.command("append")
def blocks_append(
    label: Label,
    text: Annotated[str, typer.Argument(help="Text to add on a new line.")],
    dry_run: DryRun = False,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Append a line to a block."""
    _block_command(
        db, sandbox, as_json, lambda b: b.append(label, text, dry_run=dry_run), dry_run, writes=True
    )


@blocks_app.command("replace")
def blocks_replace(
    label: Label,
    old: Annotated[str, typer.Argument(help="Text to replace (must occur).")],
    new: Annotated[str, typer.Argument(help="Replacement.")],
    dry_run: DryRun = False,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Replace text inside a block."""
    _block_command(
        db,
        sandbox,
        as_json,
        lambda b: b.replace(label, old, new, dry_run=dry_run),
        dry_run,
        writes=True,
    )


@blocks_app.command("forget")
def blocks_forget(
    did: Annotated[str, typer.Argument(help="The person's DID.")],
    yes: Yes = False,
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: AsJson = False,
) -> None:
    """Erase a person's block and its versions for good (with `phi memory forget`)."""
    from phi.memory.learning import Blocks

    confirm_erase(f"the block of {did!r} and its versions", yes=yes)

    async def go() -> int:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await Blocks(memory=memory).forget(did)

    versions = run(go)
    if as_json:
        emit_json({"did": did, "versions": versions})
    else:
        console.print(
            f"erased {plural(versions, 'version')} of the block of {did}", highlight=False
        )
