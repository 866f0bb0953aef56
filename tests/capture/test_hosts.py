"""Each host's hook events become Claude Code's; the shipped configurations run phi's hook
and a refused event never blocks the host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from phi.capture import BAD_EVENT_EXIT, check_event
from phi.capture.hooks import parse_event
from phi.capture.hosts import COPILOT_CLI, GEMINI_CLI, HOSTS, Host, host_named, normalize_event
from phi.errors import InvalidInput

ROOT = Path(__file__).parent.parent.parent
FIXTURES = Path(__file__).parent / "fixtures"


def normalized(host: Host, event: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(normalize_event(host, json.dumps(event)))
    return result


def recorded(host: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads((FIXTURES / host / "session-1.json").read_text())
    return events


@pytest.mark.parametrize("host", ["gemini-cli", "copilot-cli"])
def test_every_recorded_event_becomes_a_claude_code_event(host: str) -> None:
    names = []
    for event in recorded(host):
        payload = normalize_event(HOSTS[host], json.dumps(event))
        names.append(check_event(payload).name)
        parsed = parse_event(payload)  # what the drainer stores
        assert parsed.session_id == event["session_id"]
        assert parsed.cwd == "/home/dev/src/tidepool"
    assert set(names) >= {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"}


def test_gemini_events_tools_and_answer_take_claude_code_names() -> None:
    events = [normalized(GEMINI_CLI, e) for e in recorded("gemini-cli")]
    assert [e["hook_event_name"] for e in events] == [
        "SessionStart",
        "UserPromptSubmit",
        *["PreToolUse", "PostToolUse"] * 4,
        "Stop",
        "SessionEnd",
    ]
    edit = events[6]
    assert (edit["tool_name"], edit["host_tool_name"]) == ("Edit", "replace")
    assert edit["tool_input"]["new_string"].endswith("datetime.now(UTC) + ttl")
    assert events[2]["tool_name"] == "Bash"
    assert events[2]["tool_input"]["command"] == "uv run pytest tests/test_sessions.py -x -q"
    # A failed command says `Exit Code: 1` at the end of its output.
    failed, passed = events[3]["tool_response"], events[9]["tool_response"]
    assert failed["exit_code"] == 1
    assert "TypeError: can't compare" in failed["output"]
    assert "exit_code" not in passed
    assert events[10]["last_assistant_message"].startswith("Fixed. `Session.expires_at`")
    assert "prompt_response" not in events[10]


def test_a_gemini_tool_error_is_a_failed_tool_call() -> None:
    event = {
        "session_id": "s",
        "cwd": "/w",
        "hook_event_name": "AfterTool",
        "tool_name": "read_file",
        "tool_input": {"file_path": "/w/missing.py"},
        "tool_response": {
            "llmContent": [{"text": "File not found: /w/missing.py"}],
            "returnDisplay": "File not found.",
            "error": {"message": "File not found: /w/missing.py", "type": "file_not_found"},
        },
    }
    done = normalized(GEMINI_CLI, event)
    assert done["hook_event_name"] == "PostToolUseFailure"
    assert done["error"] == "File not found: /w/missing.py"
    assert done["tool_response"] == {"output": "File not found: /w/missing.py"}
    assert (done["tool_name"], done["host_tool_name"]) == ("Read", "read_file")


def test_a_gemini_event_without_work_is_refused_by_name() -> None:
    with pytest.raises(InvalidInput, match=r"^Gemini CLI event 'BeforeModel' is not captured"):
        normalize_event(GEMINI_CLI, '{"hook_event_name": "BeforeModel", "session_id": "s"}')


def test_gemini_context_is_json_alone_and_only_where_gemini_reads_it() -> None:
    answer = GEMINI_CLI.context_output("UserPromptSubmit", "remembered")
    assert answer is not None
    assert json.loads(answer) == {
        "hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "remembered"}
    }
    start = GEMINI_CLI.context_output("SessionStart", "x")
    assert start is not None
    assert json.loads(start)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert GEMINI_CLI.context_output("PreToolUse", "x") is None
    assert COPILOT_CLI.context_output("SessionStart", "x") is None


def test_copilot_arguments_results_and_failures_take_claude_code_shapes() -> None:
    events = [normalized(COPILOT_CLI, e) for e in recorded("copilot-cli")]
    # `edit` sent its arguments as a JSON string, with `path`.
    edit = events[8]
    assert (edit["tool_name"], edit["host_tool_name"]) == ("Edit", "edit")
    assert edit["tool_input"]["file_path"] == "/home/dev/src/tidepool/src/tidepool/sessions.py"
    assert "path" not in edit["tool_input"]
    passed = events[11]
    assert passed["tool_response"] == {"output": "....\n4 passed in 0.18s"}
    assert "tool_result" not in passed
    missing = events[5]
    assert missing["hook_event_name"] == "PostToolUseFailure"
    assert missing["error"].endswith("does not exist. Please provide a valid path.")
    denied = dict(recorded("copilot-cli")[3])
    denied["tool_result"] = {"result_type": "denied", "text_result_for_llm": ""}
    done = normalized(COPILOT_CLI, denied)
    assert (done["hook_event_name"], done["error"]) == (
        "PostToolUseFailure",
        "the tool call ended as denied",
    )
    odd = {**recorded("copilot-cli")[2], "tool_input": "rm -rf dist"}
    assert normalized(COPILOT_CLI, odd)["tool_input"] == {"args": "rm -rf dist"}


def test_a_copilot_camel_case_event_says_which_names_to_register() -> None:
    camel = {"sessionId": "s", "timestamp": 1704614600000, "cwd": "/w", "toolName": "bash"}
    with pytest.raises(InvalidInput, match="register the PascalCase event names"):
        normalize_event(COPILOT_CLI, json.dumps(camel))
    with pytest.raises(InvalidInput, match=r"^Copilot CLI event 'ErrorOccurred' is not captured"):
        normalize_event(COPILOT_CLI, '{"hook_event_name": "ErrorOccurred", "session_id": "s"}')


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_what_is_not_an_event_is_refused_as_for_claude_code(host: str) -> None:
    for payload, message in (
        ("", "hook event is empty"),
        ("[1]", "hook event must be a JSON object, not list"),
        ("{", "hook event is not JSON"),
        ("[" * 300 + "]" * 300, "nested over"),
    ):
        with pytest.raises(InvalidInput, match=message):
            check_event(normalize_event(HOSTS[host], payload))
    assert BAD_EVENT_EXIT in HOSTS[host].non_blocking_exits


def test_an_unknown_host_is_refused_without_blocking(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"unknown host 'cursor'; expected one of claude-code"):
        host_named("cursor")
    done = subprocess.run(
        [sys.executable, "-m", "phi.capture", "--host", "cursor"],
        input="{}",
        capture_output=True,
        text=True,
        env={**os.environ, "PHI_HOME": str(tmp_path)},
        check=False,
    )
    assert (done.returncode, done.stdout) == (BAD_EVENT_EXIT, "")
    assert done.stderr.startswith("phi capture: unknown host 'cursor'")


def gemini_commands() -> tuple[set[str], set[str]]:
    settings = json.loads((ROOT / "examples" / "gemini-cli" / "settings.json").read_text())
    hooks = settings["hooks"]
    commands = {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]}
    return set(hooks), commands


def copilot_commands() -> tuple[set[str], set[str]]:
    config = json.loads((ROOT / "examples" / "copilot-cli" / "phi.json").read_text())
    hooks = config["hooks"]
    assert config["version"] == 1
    return set(hooks), {h["bash"] for entries in hooks.values() for h in entries}


@pytest.mark.parametrize(
    ("host", "config", "expected"),
    [
        (
            GEMINI_CLI,
            gemini_commands,
            {"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent"},
        ),
        (
            COPILOT_CLI,
            copilot_commands,
            {
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
                "Stop",
            },
        ),
    ],
)
def test_the_shipped_configuration_runs_phi_and_never_blocks(
    host: Host, config: Any, expected: set[str], tmp_path: Path
) -> None:
    events, commands = config()
    assert events >= expected
    (command,) = commands
    assert f"--host {host.name}" in command
    # Run as the host runs it (through a shell), with an event phi refuses.
    done = subprocess.run(
        command,
        shell=True,
        input=json.dumps({"hook_event_name": "SessionStart", "cwd": "/w"}),
        capture_output=True,
        text=True,
        env={**os.environ, "PHI_PYTHON": sys.executable, "PHI_HOME": str(tmp_path)},
        check=False,
    )
    assert done.returncode in host.non_blocking_exits
    assert (done.returncode, done.stdout) == (BAD_EVENT_EXIT, "")
    assert done.stderr == "phi capture: hook event has no session_id\n"
