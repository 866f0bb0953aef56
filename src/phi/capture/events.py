"""The hook events `phi capture` takes (Claude Code's names) and the rules for their ids, in
a module of their own so the fast path of a hook (`phi.capture._run`) can check an event
without importing pydantic, and the MCP `capture` tool applies the same rules."""

from __future__ import annotations

import os
import unicodedata
from typing import Final, Literal, get_args
from urllib.parse import quote

__all__ = ["HOOK_EVENTS", "HookName", "capture_uri", "is_blank", "new_event_id"]

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

_INVISIBLE: Final = frozenset({"Zs", "Zl", "Zp", "Cc", "Cf"})
"""Unicode categories that show nothing: separators, controls and format characters."""


def is_blank(text: str) -> bool:
    """True when `text` shows nothing: only spaces, line breaks, control or format characters.

    `str.strip` alone lets a zero-width space (a format character) through, and a session
    named by one is as good as none: every such session would share one thread. (A lone
    surrogate is not blank but not text either: the store refuses it by name.)
    """
    return all(unicodedata.category(ch) in _INVISIBLE for ch in text)


def new_event_id() -> str:
    """A random id for one captured event (96 bits: no two events of a session share one)."""
    return os.urandom(12).hex()


def capture_uri(session: str, event: str) -> str:
    """`capture://<session>/<event>`: the source of every row one captured event makes.

    A row's identity is its kind, text and sources, so this keeps the same text from two
    events (of one session or of two) as two rows, and one event stored twice as one.
    """
    # `surrogatepass`: a lone surrogate must reach the store's text check, which names it,
    # instead of failing here with an encoding error nobody can read.
    return "capture://" + "/".join(
        quote(part, safe="", errors="surrogatepass") for part in (session, event)
    )
