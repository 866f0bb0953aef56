"""Everything a session says and does is kept, once, whole; looking around is not noise.

Through `apply_event` (the drainer's path) on a real SQLite store with MiniLM: every
assistant text of the transcript (the reasoning between tool calls too), long output in
chunks with nothing cut, failures with their cause, the events a host fires at a subagent's
end, a compaction and a session's end, and one compact row for what a session read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from phi.capture.hooks import MAX_KEPT_CHARS
from phi.mcp.capture import MAX_CAPTURE_CHARS
from phi.memory import Memory, Row
from tests.capture._hook_events import NS, send

pytestmark = pytest.mark.anyio


def entry(uuid: str, *parts: object, role: str = "assistant", at: str | None = None) -> str:
    content = [{"type": "text", "text": p} if isinstance(p, str) else p for p in parts]
    line: dict[str, object] = {
        "type": role,
        "uuid": uuid,
        "message": {"role": role, "content": content},
    }
    if at:
        line["timestamp"] = at
    return json.dumps(line)


def write(path: Path, *lines: str) -> str:
    path.write_text("".join(f"{line}\n" for line in lines))
    return str(path)


def said(rows: tuple[Row, ...] | list[Row]) -> list[str]:
    return [r.content for r in rows]


async def test_every_assistant_text_is_kept_once_in_order(memory: Memory, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    first_turn = [
        entry("u1", "fix the flaky test", role="user"),
        entry("a1", "The test reads the clock twice; I'll freeze it first."),
        entry("a2", {"type": "tool_use", "name": "Bash", "input": {"command": "pytest"}}),
        entry("a3", "It passes 50 runs in a row now.", "Done."),
    ]
    done = await send(memory, "Stop", transcript_path=write(path, *first_turn))
    assert said(done.rows) == [
        "assistant: The test reads the clock twice; I'll freeze it first.",
        "assistant: It passes 50 runs in a row now.\nDone.",
    ]
    assert [r.meta["said"] for r in done.rows] == ["a1", "a3"]
    # The same Stop again, then a new turn: only what is new is stored.
    assert (await send(memory, "Stop", transcript_path=str(path))).rows == ()
    later = [*first_turn, entry("u2", "and the other one?", role="user"), entry("a4", "Same fix.")]
    done = await send(memory, "Stop", transcript_path=write(path, *later))
    assert said(done.rows) == ["assistant: Same fix."]
    rows = [r async for r in memory.export(namespace=NS)]
    assert len(rows) == 3


async def test_a_redelivered_stop_makes_no_second_row(memory: Memory, tmp_path: Path) -> None:
    """Idempotent by identity, not only by the cursor: the kept rows name each entry."""
    path = write(tmp_path / "t.jsonl", entry("a1", "one"), entry("a2", "two"))
    first = await send(memory, "Stop", transcript_path=path, event_id="e1")
    second = await send(memory, "SessionEnd", transcript_path=path, event_id="e2")
    assert second.rows == ()
    # Another session's transcript with the same lines: rows of its own.
    other = await send(memory, "Stop", session="s2", transcript_path=path)
    assert len(other.rows) == len(first.rows) == 2
    assert {r.row_id for r in other.rows}.isdisjoint(r.row_id for r in first.rows)


async def test_a_timestamp_dates_the_row(memory: Memory, tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.jsonl",
        entry("a1", "dated", at="2026-11-20T09:30:00.000Z"),
        entry("a2", "undated", at="not a time"),
        entry("a3", "naive", at="2026-11-20T09:30:00"),
    )
    done = await send(memory, "Stop", transcript_path=path)
    dated, undated, naive = done.rows
    assert dated.created_at.isoformat() == "2026-11-20T09:30:00+00:00"
    assert undated.created_at.year >= 2026 and undated.created_at != dated.created_at
    assert naive.created_at != dated.created_at


async def test_subagent_compaction_and_session_end_keep_the_words_too(
    memory: Memory, tmp_path: Path
) -> None:
    main = write(tmp_path / "main.jsonl", entry("m1", "delegating the search"))
    agent = write(tmp_path / "agent.jsonl", entry("x1", "found it in utils.py"))
    done = await send(memory, "SubagentStop", transcript_path=main, agent_transcript_path=agent)
    assert said(done.rows) == ["assistant: found it in utils.py"]
    done = await send(memory, "PreCompact", transcript_path=main, trigger="auto")
    assert said(done.rows) == ["assistant: delegating the search"]
    more = write(tmp_path / "main.jsonl", entry("m1", "delegating the search"), entry("m2", "bye"))
    done = await send(memory, "SessionEnd", transcript_path=more, reason="exit")
    assert said(done.rows) == ["assistant: bye"]


async def test_without_a_transcript_stop_keeps_the_last_message_it_carries(
    memory: Memory,
) -> None:
    done = await send(memory, "Stop", last_assistant_message="All green.")
    assert said(done.rows) == ["assistant: All green."]
    assert (await send(memory, "Stop", last_assistant_message="All green.")).rows == ()
    assert (await send(memory, "Stop", last_assistant_message="  ")).rows == ()


async def test_long_output_is_chunked_whole(memory: Memory) -> None:
    log = "\n".join(f"line {i:05d}: compiling module_{i}" for i in range(600))  # ~19,000 chars
    done = await send(
        memory,
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": "make"},
        tool_response={"stdout": log},
    )
    assert len(done.rows) > 10
    kept = "\n".join(r.content.removeprefix("tool result of Bash: ") for r in done.rows)
    assert kept.split("\n") == log.split("\n")
    prompt = "p" * 9000
    done = await send(memory, "UserPromptSubmit", prompt=prompt)
    assert "".join(r.meta["turns"][0]["text"] for r in done.rows) == prompt


async def test_only_runaway_output_is_cut_with_a_note(memory: Memory) -> None:
    assert MAX_KEPT_CHARS == MAX_CAPTURE_CHARS  # what the hook keeps, `capture` takes
    huge = "x" * (MAX_KEPT_CHARS + 5000)
    done = await send(memory, "PostToolUse", tool_name="Bash", tool_response=huge)
    text = "\n".join(r.content.removeprefix("tool result of Bash: ") for r in done.rows)
    marker = "[... 5000 characters left out ...]"
    assert marker in text
    assert len(text.replace("\n", "").replace(marker, "")) == MAX_KEPT_CHARS - len(marker) - 2


async def test_a_failing_tool_is_an_error_linked_to_its_decision_and_prompt(
    memory: Memory, tmp_path: Path
) -> None:
    prompt = (await send(memory, "UserPromptSubmit", prompt="upgrade httpx")).rows[0]
    # The assistant's words between prompt and tool call are not the decision's reason.
    await send(memory, "Stop", transcript_path=write(tmp_path / "t.jsonl", entry("a1", "ok")))
    decided = await send(
        memory,
        "PreToolUse",
        tool_name="Bash",
        tool_use_id="t1",
        tool_input={"command": "uv add httpx==1.0"},
    )
    assert decided.caused_by == prompt.row_id
    failed = await send(
        memory,
        "PostToolUseFailure",
        tool_name="Bash",
        tool_use_id="t1",
        tool_input={"command": "uv add httpx==1.0"},
        is_interrupt=False,
        error="Exit code 1\nNo solution found: httpx==1.0 is unavailable",
    )
    (error,) = failed.rows
    assert error.content == (
        "error in Bash: Exit code 1\nNo solution found: httpx==1.0 is unavailable"
    )
    assert error.tags == ("error",)
    assert failed.caused_by == decided.rows[0].row_id


async def test_looking_around_is_one_row_per_session(memory: Memory) -> None:
    looks: list[tuple[str, dict[str, Any]]] = [
        ("Read", {"file_path": "/repo/a.py"}),
        ("Grep", {"pattern": "def fetch", "path": "/repo/src", "glob": "*.py"}),
        ("Glob", {"pattern": "**/*.toml"}),
        ("LS", {"path": "/repo"}),
        ("Read", {"file_path": "/repo/a.py"}),  # again: nothing new
    ]
    for tool, tool_input in looks:
        pre = await send(memory, "PreToolUse", tool_name=tool, tool_input=tool_input)
        assert pre.rows == ()  # no decision row for a look
        await send(
            memory,
            "PostToolUse",
            tool_name=tool,
            tool_input=tool_input,
            tool_response={"file": {"content": "x" * 5000}},
        )
    rows = [r async for r in memory.export(namespace=NS)]
    (current,) = [r for r in rows if r.status == "active"]
    assert current.content == (
        'files looked at in this session: /repo/a.py, grep "def fetch" in /repo/src *.py, '
        'glob "**/*.toml", /repo'
    )
    assert (current.kind, current.trust, current.tags) == ("note", "low", ("looked_at",))
    assert len(await memory.history(current.row_id)) == 4
    assert all("x" * 100 not in r.content for r in rows)  # what was read is not stored
    # Another session has its own list; a failed read is an error, kept.
    other = await send(
        memory,
        "PostToolUse",
        session="s2",
        tool_name="Read",
        tool_input={"file_path": "/repo/b.py"},
        tool_response="b",
    )
    assert said(other.rows) == ["files looked at in this session: /repo/b.py"]
    assert other.rows[0].supersedes is None
    failed = await send(
        memory,
        "PostToolUseFailure",
        tool_name="Read",
        tool_input={"file_path": "/repo/gone.py"},
        error="File does not exist.",
    )
    assert said(failed.rows) == ["error in Read: File does not exist."]


async def test_a_secret_in_the_transcript_is_redacted(memory: Memory, tmp_path: Path) -> None:
    """The transcript is read at drain time, past the hook's redaction of the payload: the
    store's own redaction still keeps the token out of the row and its metadata."""
    token = "ghp_" + "a1B2c3D4e5" * 4
    path = write(tmp_path / "t.jsonl", entry("a1", f"set GH_TOKEN={token} and retry"))
    (row,) = (await send(memory, "Stop", transcript_path=path)).rows
    assert row.content == "assistant: set GH_TOKEN=[REDACTED:github-token] and retry"
    assert token not in json.dumps(row.meta)
