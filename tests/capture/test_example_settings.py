"""The shipped Claude Code hooks configuration runs the hook command for every event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SETTINGS = Path(__file__).parent.parent.parent / "examples" / "claude-code" / "settings.json"


def test_every_captured_event_runs_phi_capture(tmp_path: Path) -> None:
    hooks = json.loads(SETTINGS.read_text())["hooks"]
    # Every event that carries work: a failing tool fires PostToolUseFailure, not
    # PostToolUse; a subagent's words, and a session compacted or ended, are kept too.
    assert sorted(hooks) == [
        "PostToolUse",
        "PostToolUseFailure",
        "PreCompact",
        "PreToolUse",
        "SessionEnd",
        "SessionStart",
        "Stop",
        "SubagentStop",
        "UserPromptSubmit",
    ]
    assert hooks["PostToolUseFailure"][0]["matcher"] == "*"
    commands = {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]}
    (command,) = commands
    # Run it the way Claude Code does (through a shell), with a bad event: the command
    # resolves to phi's hook and refuses it without blocking the host (exit 1, not 2).
    done = subprocess.run(
        command,
        shell=True,  # the host runs hook commands through a shell
        input='{"hook_event_name": "Stop"}',
        capture_output=True,
        text=True,
        env={**os.environ, "PHI_PYTHON": sys.executable, "PHI_HOME": str(tmp_path)},
        check=False,
    )
    assert (done.returncode, done.stderr) == (1, "phi capture: hook event has no session_id\n")
