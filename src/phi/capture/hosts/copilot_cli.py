"""GitHub Copilot CLI hooks (`.github/hooks/*.json`) as Claude Code hook events.

Verified against the host's own documentation (github/docs):
- https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference
  (content/copilot/reference/copilot-cli-reference/cli-hooks-reference.md): an event
  configured by its PascalCase name (`PreToolUse`) is sent in the "VS Code compatible"
  shape: `hook_event_name`, `session_id`, `timestamp`, `cwd`, and per event `source`,
  `prompt`, `tool_name`, `tool_input` (parsed from a JSON string when possible),
  `tool_result` (`result_type`: success, failure, denied or error; `text_result_for_llm`),
  `error`, `transcript_path`, `reason`, `trigger`. The camelCase names (`preToolUse`) send
  no event name at all, so the shipped configuration uses the PascalCase ones.
  `sessionStart` and `userPromptSubmitted` output is not processed: no context is printed
  (recall goes through the MCP server). Non-zero exits are logged and skipped; exit 2
  means deny only for `permissionRequest` and recovery guidance for `postToolUseFailure`.
- https://docs.github.com/en/copilot/reference/hooks-configuration: tool names (`bash`,
  `edit`, `view`, `create`) and the `path` argument of `edit`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from phi.capture.events import HOOK_EVENTS
from phi.capture.hosts._host import Event, Host
from phi.errors import InvalidInput

__all__ = ["COPILOT_CLI"]

_TOOLS: Final = {
    "bash": "Bash",
    "powershell": "PowerShell",
    "create": "Write",
    "edit": "Edit",
    "view": "Read",
    "glob": "Glob",
    "grep": "Grep",
    "web_fetch": "WebFetch",
    "task": "Task",
}
"""Built-in tools by Claude Code's name for the same tool (the host's own name is kept in
`host_tool_name`)."""
_FAILED: Final = frozenset({"failure", "denied", "error"})


def _arguments(value: object) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return {"args": value}
    if value is None:
        return {}
    if not isinstance(value, dict):
        return {"args": value}
    if "path" in value and "file_path" not in value:
        value = {("file_path" if k == "path" else k): v for k, v in value.items()}
    return value


def normalize(raw: Mapping[str, Any]) -> Event:
    """A Copilot CLI hook event as the Claude Code event it is."""
    name = raw.get("hook_event_name")
    if name is None:
        raise InvalidInput(
            "Copilot CLI event has no hook_event_name: register the PascalCase event names "
            "(SessionStart, PreToolUse, ...) as in examples/copilot-cli/phi.json"
        )
    if name not in HOOK_EVENTS:
        raise InvalidInput(
            f"Copilot CLI event {name!r} is not captured; register only "
            f"{', '.join(sorted(HOOK_EVENTS))}"
        )
    event: Event = {**raw, "host": "copilot-cli"}
    if "session_id" not in event and "sessionId" in raw:  # `Notification` is camelCase
        event["session_id"] = raw["sessionId"]
    tool = raw.get("tool_name")
    if isinstance(tool, str) and tool in _TOOLS:
        event["tool_name"] = _TOOLS[tool]
        event["host_tool_name"] = tool
    if "tool_input" in raw:
        event["tool_input"] = _arguments(raw["tool_input"])
    result = event.pop("tool_result", None)
    if isinstance(result, dict):
        text = result.get("text_result_for_llm")
        text = text if isinstance(text, str) else ""
        event["tool_response"] = {"output": text}
        kind = result.get("result_type")
        if kind in _FAILED:
            event["hook_event_name"] = "PostToolUseFailure"
            event["error"] = text or f"the tool call ended as {kind}"
    return event


COPILOT_CLI: Final = Host(
    name="copilot-cli",
    normalize=normalize,
    context_output=lambda _name, _text: None,
    non_blocking_exits=frozenset({0, 1}),
)
