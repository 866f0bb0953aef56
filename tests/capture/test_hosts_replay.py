"""Replay a recorded Gemini CLI and Copilot CLI session through the hook command, one
process per event, as each host runs the command of its shipped configuration.

The events were written from each host's documentation and source (cited in
`phi.capture.hosts.gemini_cli` and `phi.capture.hosts.copilot_cli`). Storing happens in the
background (the resident process, here told to stop soon after); the next session's start
runs with `--wait`, so it stores whatever is still queued before it answers, and the store
is read after it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio

from phi.capture.resident import IDLE_ENV
from phi.memory import Memory, Row

FIXTURES = Path(__file__).parent / "fixtures"
PATH = "/home/dev/src/tidepool/src/tidepool/sessions.py"


def events(host: str, name: str) -> list[str]:
    recorded = json.loads((FIXTURES / host / name).read_text())
    return [json.dumps(event) for event in recorded]


def hook(
    payload: str, home: Path, db: Path, host: str, *more: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "phi.capture", "--host", host, "--db", str(db), *more],
        input=payload,
        capture_output=True,
        text=True,
        env={**os.environ, "PHI_HOME": str(home), IDLE_ENV: "3"},
        timeout=120,
        check=False,
    )


def replay_first_session(host: str, home: Path, db: Path) -> None:
    for payload in events(host, "session-1.json"):
        started = time.monotonic()
        done = hook(payload, home, db, host)
        assert (done.returncode, done.stderr, done.stdout) == (0, "", ""), payload[:120]
        assert time.monotonic() - started < 10, "a hook must not wait for the store"


def stored(db: Path, session: str) -> list[Row]:
    async def read() -> list[Row]:
        async with Memory.open(db) as memory:
            return [r async for r in memory.export() if r.meta.get("session") == session]

    return anyio.run(read)


def causes(db: Path, row: Row) -> list[str]:
    async def read() -> list[str]:
        async with Memory.open(db) as memory:
            found = await memory.neighbors(row.row_id, types=["causal"])
            return [n.row.row_id for n in found if n.edge.dst == row.row_id]

    return anyio.run(read)


def one(rows: list[Row], kind: str, text: str) -> Row:
    (row,) = [r for r in rows if r.meta["capture"] == kind and text in r.content]
    return row


def test_a_gemini_cli_session_is_kept_and_the_next_one_starts_with_it(tmp_path: Path) -> None:
    home, db = tmp_path / "home", tmp_path / "memory.db"
    replay_first_session("gemini-cli", home, db)

    start, ask = events("gemini-cli", "session-2.json")
    done = hook(start, home, db, "gemini-cli", "--wait")
    assert (done.returncode, done.stderr) == (0, "")
    # Gemini CLI reads stdout as JSON only: the context is in hookSpecificOutput.
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    context = answer["additionalContext"]
    assert f"decision: Edit {PATH}" in context
    assert "self.expires_at = datetime.now(UTC) + ttl" in context
    # A prompt (`BeforeAgent`) is answered with what matters for it, in Gemini's format.
    done = hook(ask, home, db, "gemini-cli", "--wait")
    assert (done.returncode, done.stderr) == (0, "")
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "BeforeAgent"
    assert "datetime.now(UTC)" in answer["additionalContext"]

    rows = stored(db, "3f2b8c1e-7d4a-4e59-b0c6-9a1d2e5f8b47")
    prompt = one(rows, "turn", "The session-expiry tests fail on CI")
    assert one(rows, "turn", "Fixed. `Session.expires_at` was built with").meta["capture"] == "turn"
    first_run = one(rows, "decision", "uv run pytest tests/test_sessions.py -x -q")
    # The failed run's `Exit Code: 1` makes its result an error, linked to that run.
    failed = one(rows, "error", "TypeError: can't compare offset-naive and offset-aware")
    assert causes(db, failed) == [first_run.row_id]
    edit = one(rows, "decision", f"Edit {PATH}")
    assert edit.meta["tool"] == "Edit"
    changed = one(rows, "file_change", "datetime.now(UTC) + ttl")
    assert changed.meta["path"] == PATH
    assert causes(db, changed) == [edit.row_id]
    assert causes(db, edit) == [prompt.row_id]
    rerun = one(rows, "decision", "uv run pytest tests/test_sessions.py -q")
    assert causes(db, one(rows, "tool_result", "4 passed in 0.18s")) == [rerun.row_id]
    assert not (home / "capture" / "spool.jsonl").read_text()


def test_a_copilot_cli_session_is_kept_with_its_failed_tool_call(tmp_path: Path) -> None:
    home, db = tmp_path / "home", tmp_path / "memory.db"
    replay_first_session("copilot-cli", home, db)

    (start,) = events("copilot-cli", "session-2.json")
    done = hook(start, home, db, "copilot-cli", "--wait")
    # Copilot CLI does not read a session start's output: nothing is printed.
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "")

    rows = stored(db, "b71f0e6a-3c2d-4a8e-9f15-62d0c4e8a903")
    prompt = one(rows, "turn", "The session-expiry tests fail on CI")
    first_run = one(rows, "decision", "run Bash (Run the failing session-expiry tests)")
    result = one(rows, "tool_result", "TypeError: can't compare offset-naive")
    assert causes(db, result) == [first_run.row_id]
    wrong = "/home/dev/src/tidepool/src/tidepool/session.py"
    # A failed call comes as its own event (`PostToolUseFailure`), kept as an error.
    missing = one(rows, "error", f"Path {wrong} does not exist")
    assert (missing.meta["tool"], missing.meta["path"]) == ("Read", wrong)
    # The edit's arguments came as a JSON string with `path`: read as Claude Code's Edit.
    edit = one(rows, "decision", f"Edit {PATH}")
    assert causes(db, edit) == [prompt.row_id]
    changed = one(rows, "file_change", "datetime.now(UTC) + ttl")
    assert (changed.meta["path"], causes(db, changed)) == (PATH, [edit.row_id])
    assert one(rows, "tool_result", "4 passed in 0.18s").meta["tool"] == "Bash"
