"""The hook events `phi capture` takes (Claude Code's names), in a module of their own so the
fast path of a hook (`phi.capture._run`) can check a name without importing pydantic."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = ["HOOK_EVENTS", "HookName"]

HookName = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "SubagentStop",
    "SessionEnd",
    "Notification",
    "PreCompact",
]

HOOK_EVENTS: Final = frozenset(get_args(HookName))
