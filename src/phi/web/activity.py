"""The activity page and its API: phi's journal of runs (`phi.runtime.journal`).

`GET /api/runs` <-> `RunJournal.recent` <-> `phi runs list`; `GET /api/runs/{run_id}` <->
`RunJournal.get` <-> `phi runs show`. The page at `/activity` lists the runs and opens one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request
from pydantic import BaseModel

from phi.runtime.journal import RunJournal, RunNotFound, RunRecord

__all__ = ["RunOut", "RunSummaryOut", "activity_router"]

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
