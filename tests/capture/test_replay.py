"""Replay a recorded Claude Code session's hook payloads through the hook command.

Each payload goes to a fresh `python -m phi.capture` process on stdin, exactly as the host
runs the command in `examples/claude-code/settings.json`; storing happens in detached
background drainers, and the next session's start waits for them, then preloads.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from phi.memory import Memory

FIXTURES = Path(__file__).parent / "fixtures"
PHI = str(Path(sys.executable).parent / "phi")


def payloads(name: str) -> list[str]:
    text = (FIXTURES / name).read_text().replace("$FIXTURES", str(FIXTURES))
    return [line for line in text.splitlines() if line.strip()]


def hook(
    payload: str, home: Path, db: Path, *, command: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(command or [sys.executable, "-m", "phi.capture"]), "--db", str(db)],
        input=payload,
        capture_output=True,
        text=True,
        # One namespace for both commands: `phi capture` stores in `agent-sessions` unless
        # told otherwise, `python -m phi.capture` in the project's own unless told this.
        env={**os.environ, "PHI_HOME": str(home), "PHI_CAPTURE_PROJECT": "agent-sessions"},
        timeout=120,
        check=False,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def test_a_later_session_starts_with_the_earlier_decision_and_its_result(
    home: Path, tmp_path: Path
) -> None:
    db = tmp_path / "memory.db"
    for payload in payloads("session-1.jsonl"):
        started = time.monotonic()
        done = hook(payload, home, db)
        assert (done.returncode, done.stderr) == (0, "")
        # The first session start has nothing to preload yet; the others print nothing.
        assert done.stdout == ""
        assert time.monotonic() - started < 10, "a hook must not wait for the store"

    (start,) = payloads("session-2.jsonl")
    done = hook(start, home, db, command=[PHI, "capture"])
    assert (done.returncode, done.stderr) == (0, "")
    preload = done.stdout
    assert preload.startswith("What you remember from earlier sessions (phi's memory):")
    decision = "decision: Edit /home/dev/src/tidepool/src/tidepool/sessions.py"
    assert decision in preload
    assert "self.expires_at = datetime.now(UTC) + ttl" in preload
    assert "tool result of Bash: .... 4 passed in 0.18s" in preload
    assert "TypeError: can't compare offset-naive and offset-aware datetimes" in preload
    assert "assistant: Fixed. `Session.expires_at` was built with" in preload

    async def graph() -> None:
        async with Memory.open(db) as memory:
            rows = {r.content.split("\n")[0][:60]: r async for r in memory.export()}
            # The prompt, 3 decisions and their 3 results, what the session looked at (one
            # row for the Read, no decision or result of its own), and both assistant texts
            # of the transcript: the one between tool calls and the answer.
            assert len(rows) == 10
            by_use = {(r.meta["capture"], r.meta.get("tool_use_id")): r for r in rows.values()}
            (looked,) = [r for r in rows.values() if r.meta["capture"] == "looked_at"]
            assert looked.content == (
                "files looked at in this session: /home/dev/src/tidepool/src/tidepool/sessions.py"
            )
            assert all(r.meta.get("tool") != "Read" for r in rows.values())
            said = [r.content for r in rows.values() if r.meta.get("said")]
            assert said[0] == "assistant: Let me run the failing tests first."
            assert said[1].startswith("assistant: Fixed. `Session.expires_at` was built with")
            assert len(said) == 2
            rerun = by_use["decision", "toolu_01Hs2Tn5Ym7Wc3Xd9Ke4Gb8P"]
            passed = by_use["tool_result", "toolu_01Hs2Tn5Ym7Wc3Xd9Ke4Gb8P"]
            edit = by_use["decision", "toolu_01Vb6cXe4Hj8Kp2Qr7Sd1Fa5"]
            changed = by_use["file_change", "toolu_01Vb6cXe4Hj8Kp2Qr7Sd1Fa5"]
            (prompt,) = [r for r in rows.values() if r.content.startswith("user: ")]
            for cause, effect in ((rerun, passed), (edit, changed), (prompt, edit)):
                causal = await memory.neighbors(cause.row_id, types=["causal"])
                assert [(n.edge.src, n.edge.dst) for n in causal if n.row == effect] == [
                    (cause.row_id, effect.row_id)
                ]
            # The first run failed (PostToolUseFailure): its error is kept whole and linked
            # to the run, not to the rerun.
            failed = by_use["error", "toolu_01GxQ7hK2mVb9sT4nR8yLw3E"]
            assert failed.content.startswith("error in Bash: Exit code 1\nF\n")
            assert failed.content.endswith("offset-aware datetimes\n1 failed in 0.21s")
            causal = await memory.neighbors(failed.row_id, types=["causal"])
            assert [n.row.meta.get("tool_use_id") for n in causal] == [
                "toolu_01GxQ7hK2mVb9sT4nR8yLw3E"
            ]

    anyio.run(graph)
    assert not (home / "capture" / "spool.jsonl").read_text()


def test_a_bad_event_is_refused_with_exit_1_never_2(home: Path, tmp_path: Path) -> None:
    # Exit code 2 would make Claude Code block the tool call or the prompt.
    done = hook('{"hook_event_name": "PreToolUse"}', home, tmp_path / "m.db")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "phi capture: hook event has no session_id\n"
    done = hook("not json", home, tmp_path / "m.db")
    assert done.returncode == 1
    assert done.stderr.startswith("phi capture: hook event is not JSON:")
    assert not (home / "capture" / "spool.jsonl").exists()
