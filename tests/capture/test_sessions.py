"""Two sessions that do the same thing keep their own rows and their own links (finding 6).

Run on both stores: a row's identity (its kind, text and sources) is decided by the store.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from phi.capture import Spool, SpoolEntry
from phi.capture.spool import drain_into
from phi.mcp import capture
from phi.memory import Memory, MiniLMEmbedder, Row
from tests.postgres.schemas import fresh_schema

pytestmark = pytest.mark.anyio

SESSIONS = ("session-a", "session-b")


@pytest.fixture(params=["sqlite", "postgresql"])
async def memory(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: MiniLMEmbedder
) -> AsyncIterator[Memory]:
    if request.param == "sqlite":
        async with Memory.open(tmp_path / "memory.db", embedder=minilm) as opened:
            yield opened
        return
    async with fresh_schema() as url, Memory.open(url, embedder=minilm) as opened:
        yield opened


def events(session: str, transcript: Path) -> list[str]:
    """Four hook events, the same in every session but for the session id."""
    run = {"command": "uv run pytest -q", "description": "Run the tests"}
    common = {
        "session_id": session,
        "cwd": "/src/app",
        "transcript_path": str(transcript),
    }
    shapes: list[tuple[str, dict[str, object]]] = [
        ("UserPromptSubmit", {"prompt": "Run the tests and tell me what fails."}),
        ("PreToolUse", {"tool_name": "Bash", "tool_input": run, "tool_use_id": "toolu_1"}),
        (
            "PostToolUse",
            {
                "tool_name": "Bash",
                "tool_input": run,
                "tool_use_id": "toolu_1",
                "tool_response": {"stdout": "3 passed in 0.1s", "exit_code": 0},
            },
        ),
        ("Stop", {}),
    ]
    return [json.dumps({**common, "hook_event_name": name, **fields}) for name, fields in shapes]


async def test_identical_events_of_two_sessions_stay_apart_with_their_own_links(
    memory: Memory, tmp_path: Path
) -> None:
    transcript = tmp_path / "transcript.jsonl"
    answer = {"message": {"role": "assistant", "content": "All 3 tests pass; nothing fails."}}
    transcript.write_text(json.dumps(answer) + "\n")
    spool = Spool(directory=tmp_path / "capture")
    for session in SESSIONS:
        for payload in events(session, transcript):
            spool.append(SpoolEntry(namespace="dev", payload=payload))
    queued = spool.path.read_bytes()
    with spool.draining(wait_s=1) as mine:
        assert mine
        assert await drain_into(memory, spool, err=io.StringIO()) == 8
    # A drainer killed after storing the last event, before it moved the offset past it:
    # the next drainer stores that event again, and it makes no second row.
    spool.path.write_bytes(queued)
    (spool.directory / "spool.offset").write_text(str(queued.rindex(b"\n", 0, -1) + 1))
    with spool.draining(wait_s=1):
        assert await drain_into(memory, spool, err=io.StringIO()) == 1

    rows = [r async for r in memory.export()]
    assert len(rows) == 8
    kinds = ["turn", "decision", "tool_result", "turn"]
    for session in SESSIONS:
        mine_ = [r for r in rows if r.meta["session"] == session]
        assert [r.meta["capture"] for r in mine_] == kinds
        assert all(r.thread == session for r in mine_)
        for row in mine_:
            assert row.source_uris == (f"capture://{session}/{row.meta['event']}",)
        prompt, decision, result, _answer = mine_
        for cause, effect in ((prompt, decision), (decision, result)):
            assert await causes_of(memory, effect) == [cause.row_id]
    assert len({r.meta["event"] for r in rows}) == 8


async def causes_of(memory: Memory, row: Row) -> list[str]:
    linked = await memory.neighbors(row.row_id, types=["causal"])
    return [n.edge.src for n in linked if n.edge.dst == row.row_id]


async def test_a_capture_call_is_its_own_row_in_each_session(memory: Memory) -> None:
    """The MCP `capture` tool: the same decision sent by two sessions makes two rows."""
    rows = [
        (
            await capture(memory, namespace="dev", session=s, kind="decision", content="run tests")
        ).rows[0]
        for s in SESSIONS
    ]
    assert len({r.row_id for r in rows}) == 2
    assert [r.meta["session"] for r in rows] == list(SESSIONS)
    assert [r.source_uris[0].rsplit("/", 1)[0] for r in rows] == [
        f"capture://{s}" for s in SESSIONS
    ]
