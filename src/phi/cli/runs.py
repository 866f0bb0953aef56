"""`phi runs list | show`: the journal of agent runs (`phi.runtime.journal`); `phi runs
pending`: the notifications failed runs left unanswered (`phi.runtime.pending`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from phi.cli._edge import Db, InSandbox, console, emit_json, open_memory, run, settings

if TYPE_CHECKING:
    from phi.runtime.journal import RunJournal, RunRecord
    from phi.runtime.pending import PendingNotification, PendingQueue

__all__ = ["runs_app"]

runs_app = typer.Typer(help="What phi's runs saw and did: the run journal under $PHI_HOME.")


def _journal() -> RunJournal:
    from phi.runtime.journal import RunJournal

    return RunJournal.at_home(settings().home)


def _line(record: RunRecord) -> str:
    tools = ", ".join(call.tool for call in record.tool_calls) or "no tools"
    return (
        f"{record.run_id}  {record.started_at:%Y-%m-%d %H:%M:%S}  {record.entry:<13} "
        f"{record.outcome:<6} {record.seconds:6.1f}s  {record.input_tokens}+"
        f"{record.output_tokens} tok  [{tools}]  {record.output}"
    )


@runs_app.command("list")
def list_command(
    limit: Annotated[int, typer.Option(min=1, help="How many runs, newest first.")] = 20,
    entry: Annotated[
        str | None, typer.Option(help="Only runs of this entry point (e.g. notifications).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON for scripts.")] = False,
) -> None:
    """The newest runs: id, time, entry point, outcome, duration, tokens, tools, log line."""
    journal = _journal()
    records = run(lambda: journal.recent(limit=limit, entry=entry))
    if as_json:
        emit_json([record.summary() for record in records])
        return
    if not records:
        console.print(f"no runs journalled yet in {journal.path}", highlight=False)
    for record in records:
        console.print(_line(record), highlight=False, markup=False, soft_wrap=True)


@runs_app.command("show")
def show_command(
    run_id: Annotated[str, typer.Argument(help="A run id from `phi runs list` (or its prefix).")],
    as_json: Annotated[bool, typer.Option("--json", help="JSON for scripts.")] = False,
) -> None:
    """One run in full: its exact system prompt, every tool call with arguments and result,
    usage, timings and outcome."""
    journal = _journal()
    record = run(lambda: journal.get(run_id))
    if as_json:
        emit_json(record.to_json())
        return
    out = [
        _line(record),
        f"model: {record.model} ({record.requests} requests)",
        f"system prompt (sha256 {record.prompt_hash[:16]}…):",
        record.system_prompt,
        "",
        f"tool calls ({len(record.tool_calls)}):",
    ]
    for call in record.tool_calls:
        took = f" {call.seconds:.2f}s" if call.seconds is not None else ""
        out.append(f"- {call.tool}({call.args}) → {call.outcome}{took}: {call.result}")
    if record.images:
        out.append(f"images passed to the model ({len(record.images)}):")
        out.extend(f"- {i.media_type}, {i.size:,} bytes, from {i.source}" for i in record.images)
    if record.actions:
        out.append("actions:")
        out.extend(f"- {line}" for line in record.actions)
    console.print("\n".join(out), highlight=False, markup=False, soft_wrap=True)


def _pending_line(entry: PendingNotification) -> str:
    n = entry.notification
    runs = f"{entry.failures} failed run{'s' if entry.failures != 1 else ''}"
    when = (
        f"next try {entry.retry_at:%Y-%m-%d %H:%M:%S} UTC"
        if entry.retry_at is not None
        else f"set aside {entry.last_failed_at:%Y-%m-%d %H:%M:%S} UTC"
    )
    return (
        f"{entry.status:<9}  {n.reason} from @{n.author_handle}  {runs}, {when}  {n.uri}  "
        f"last error: {entry.error}"
    )


@runs_app.command("pending")
def pending_command(
    db: Db = None,
    sandbox: InSandbox = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON for scripts.")] = False,
) -> None:
    """Notifications failed runs left unanswered (kept in phi's memory): `waiting` for
    another run, with when, or `set-aside` after their last allowed failure."""
    from phi.runtime.pending import read_pending

    async def read() -> list[PendingQueue]:
        async with open_memory(db, sandbox=sandbox) as memory:
            return await read_pending(memory)

    queues = run(read)
    if as_json:
        emit_json([summary for queue in queues for summary in queue.summaries()])
        return
    entries = [entry for queue in queues for entry in queue.entries]
    if not entries:
        console.print("no notifications waiting for a retry or set aside", highlight=False)
    for entry in entries:
        console.print(_pending_line(entry), highlight=False, markup=False, soft_wrap=True)
