"""Gemini CLI hooks (`.gemini/settings.json`) as Claude Code hook events.

Verified against the host's own documentation and source (google-gemini/gemini-cli):
- https://geminicli.com/docs/hooks/reference (docs/hooks/reference.md): every event carries
  `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`; `BeforeAgent` adds
  `prompt`; `BeforeTool` `tool_name` and `tool_input`; `AfterTool` also `tool_response`
  (`llmContent`, `returnDisplay`, `error`); `AfterAgent` `prompt` and `prompt_response`;
  `SessionStart` `source`; `SessionEnd` `reason`; `PreCompress` `trigger`.
  `hookSpecificOutput.additionalContext` on stdout (JSON only) adds context at
  `SessionStart` and `BeforeAgent`.
- packages/core/src/hooks/types.ts (the input interfaces) and hookRunner.ts: exit 0 and 1
  never block (1 is shown as a warning); every other code, not only 2, blocks.
- packages/core/src/tools/definitions/base-declarations.ts (tool and argument names:
  `run_shell_command` `command`, `write_file` `file_path` `content`, `replace` `file_path`
  `old_string` `new_string`, `read_file` `file_path`) and tools/shell.ts (a failed
  command's `llmContent` ends in a line `Exit Code: N`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from phi.capture.hosts._host import Event, Host
from phi.errors import InvalidInput

__all__ = ["GEMINI_CLI"]

_EVENTS: Final = {
    "SessionStart": "SessionStart",
    "BeforeAgent": "UserPromptSubmit",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
    "AfterAgent": "Stop",
    "SessionEnd": "SessionEnd",
    "PreCompress": "PreCompact",
    "Notification": "Notification",
}
"""Gemini CLI's events that carry work, by the Claude Code event they are."""
_TOOLS: Final = {
    "run_shell_command": "Bash",
    "write_file": "Write",
    "replace": "Edit",
    "read_file": "Read",
    "glob": "Glob",
    "grep_search": "Grep",
    "list_directory": "LS",
    "web_fetch": "WebFetch",
    "google_web_search": "WebSearch",
    "write_todos": "TodoWrite",
}
"""Built-in tools whose arguments are named as Claude Code's same tool names them, so a
file edit is stored as one (the host's own name is kept in `host_tool_name`)."""
_EXIT_CODE: Final = re.compile(r"^Exit Code: (-?\d+)$", re.MULTILINE)
_CONTEXT_EVENTS: Final = {"SessionStart": "SessionStart", "UserPromptSubmit": "BeforeAgent"}


def _text(content: object) -> str:
    """`llmContent` (a string, a part, or a list of parts) as text."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    texts = [
        p if isinstance(p, str) else p["text"]
        for p in parts
        if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str))
    ]
    if texts:
        return "\n".join(texts)
    return "" if content is None else json.dumps(content, ensure_ascii=False, sort_keys=True)


def _tool_result(event: Event, response: object) -> None:
    if not isinstance(response, dict):
        return
    output = _text(response.get("llmContent"))
    result: dict[str, Any] = {"output": output}
    if code := _EXIT_CODE.search(output):
        result["exit_code"] = int(code.group(1))
    event["tool_response"] = result
    error = response.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        event["hook_event_name"] = "PostToolUseFailure"
        event["error"] = message if isinstance(message, str) else json.dumps(error)


def normalize(raw: Mapping[str, Any]) -> Event:
    """A Gemini CLI hook event as the Claude Code event it is."""
    name = raw.get("hook_event_name")
    if not isinstance(name, str) or name not in _EVENTS:
        raise InvalidInput(
            f"Gemini CLI event {name!r} is not captured; register only "
            f"{', '.join(_EVENTS)} (see examples/gemini-cli/settings.json)"
        )
    event: Event = {**raw, "hook_event_name": _EVENTS[name], "host": "gemini-cli"}
    tool = raw.get("tool_name")
    if isinstance(tool, str) and tool in _TOOLS:
        event["tool_name"] = _TOOLS[tool]
        event["host_tool_name"] = tool
    if name == "AfterTool":
        _tool_result(event, raw.get("tool_response"))
    elif name == "AfterAgent":
        # The answer comes in the event itself; the transcript is Gemini's own JSON.
        event["last_assistant_message"] = raw.get("prompt_response")
        event.pop("prompt_response", None)
    return event


def context_output(name: str, text: str) -> str | None:
    event = _CONTEXT_EVENTS.get(name)
    if event is None:
        return None
    # stdout must be JSON alone: Gemini CLI reads any other text as a system message.
    answer = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return json.dumps(answer, ensure_ascii=False)


GEMINI_CLI: Final = Host(
    name="gemini-cli",
    normalize=normalize,
    context_output=context_output,
    non_blocking_exits=frozenset({0, 1}),
)
