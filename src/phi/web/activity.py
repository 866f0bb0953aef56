"""The activity page and its API: phi's journal of runs (`phi.runtime.journal`).

`GET /api/runs` <-> `RunJournal.recent` <-> `phi runs list`; `GET /api/runs/{run_id}` <->
`RunJournal.get` <-> `phi runs show`; `GET /api/pending` <-> `read_pending` <-> `phi runs
pending` (notifications failed runs left unanswered, from phi's memory). The page at
`/activity` lists them and the runs, and opens a run.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel

from phi.memory import Memory
from phi.runtime.journal import RunJournal, RunNotFound, RunRecord
from phi.runtime.pending import read_pending
from phi.web._deps import get_memory

__all__ = ["PendingOut", "RunOut", "RunSummaryOut", "activity_router"]

activity_router = APIRouter()


class RunSummaryOut(BaseModel):
    """One run in a list."""

    run_id: str
    entry: str
    started_at: str
    seconds: float
    outcome: str
    output: str
    tools: list[str]
    model: str | None
    input_tokens: int
    output_tokens: int


class ToolCallOut(BaseModel):
    """A tool call of a run and its result."""

    tool: str
    args: str
    result: str
    outcome: str
    seconds: float | None


class RunOut(RunSummaryOut):
    """One run in full."""

    prompt_hash: str
    system_prompt: str
    requests: int
    tool_calls: list[ToolCallOut]
    actions: list[str]


def _journal(request: Request) -> RunJournal:
    journal: RunJournal | None = getattr(request.app.state, "journal", None)
    if journal is None:
        raise HTTPException(404, "this server keeps no run journal")
    return journal


def _summary(record: RunRecord) -> RunSummaryOut:
    return RunSummaryOut.model_validate(record.summary())


@activity_router.get("/api/runs")
async def list_runs(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    entry: Annotated[str | None, Query(description="Only runs of this entry point.")] = None,
) -> list[RunSummaryOut]:
    """`RunJournal.recent`: the newest runs first."""
    return [_summary(r) for r in await _journal(request).recent(limit=limit, entry=entry)]


@activity_router.get("/api/runs/{run_id}")
async def get_run(request: Request, run_id: str) -> RunOut:
    """`RunJournal.get`: one run with its prompt, tool calls, usage and outcome."""
    try:
        record = await _journal(request).get(run_id)
    except RunNotFound as exc:
        raise HTTPException(404, str(exc)) from exc
    return RunOut.model_validate(record.to_json())


class PendingOut(BaseModel):
    """A notification failed runs left unanswered: waiting for another run, or set aside."""

    account: str
    """phi's DID."""
    status: str
    """`waiting` or `set-aside`."""
    uri: str
    reason: str
    author_handle: str
    text: str
    failures: int
    first_failed_at: str
    last_failed_at: str
    retry_at: str | None
    """When it runs again (waiting only)."""
    error: str
    """What ended the last run it was in."""


@activity_router.get("/api/pending")
async def list_pending(memory: Annotated[Memory, Depends(get_memory)]) -> list[PendingOut]:
    """`read_pending`: the notifications waiting for a retry after a failed run, and those
    set aside after their last allowed failure."""
    queues = await read_pending(memory)
    return [PendingOut.model_validate(s) for queue in queues for s in queue.summaries()]
