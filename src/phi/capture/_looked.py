"""What a session looked at, kept as one compact row instead of one row per read.

`Read`, `Glob`, `Grep` and `LS` run dozens of times a session; a row for each (with the
whole file it printed) would fill a later session's budget with text the repository
itself holds. What a later session can use is which files this one looked at, so each
session has one row listing them, and each new look supersedes it with the longer list.
A failed look is an error and is kept as one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from phi.capture.events import capture_uri, new_event_id
from phi.errors import NamespaceNotFound

if TYPE_CHECKING:
    from collections.abc import Mapping

    from phi.memory import Memory, Row

__all__ = ["LOOKING_TOOLS", "looked_at", "note_looked"]

LOOKING_TOOLS: Final = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
MAX_LOOKED: Final = 200
"""Entries one session's row lists (the latest kept): a bound on one row's size."""
_LOOKBACK: Final = 500
"""Latest rows of the namespace searched for the session's list."""


def looked_at(tool: str, tool_input: Mapping[str, Any] | None) -> str:
    """The look in a few words: the path read, or the pattern and where it was searched."""
    args = tool_input or {}
    path = args.get("file_path", args.get("notebook_path", args.get("path")))
    where = path if isinstance(path, str) and path.strip() else None
    pattern = args.get("pattern")
    if tool in ("Glob", "Grep") and isinstance(pattern, str):
        glob = args.get("glob")
        scope = " ".join(s for s in (where, glob if isinstance(glob, str) else None) if s)
        return f"{tool.lower()} {json.dumps(pattern, ensure_ascii=False)}" + (
            f" in {scope}" if scope else ""
        )
    return where or f"{tool} {json.dumps(dict(args), ensure_ascii=False, sort_keys=True)}"


async def note_looked(
    memory: Memory, *, namespace: str, session: str, item: str, event_id: str | None
) -> tuple[Row, ...]:
    """Add `item` to the session's list of what it looked at (nothing if it is there)."""
    from phi.memory import NewRow

    previous = await _current(memory, namespace=namespace, session=session)
    items: list[str] = list(previous.meta.get("looked_at", [])) if previous else []
    if item in items:
        return ()  # looked at again, or this very event delivered twice
    items = [*items, item][-MAX_LOOKED:]
    event = event_id or new_event_id()
    row = await memory.remember(
        NewRow(
            content="files looked at in this session: " + ", ".join(items),
            namespace=namespace,
            kind="note",
            trust="low",
            tags=("looked_at",),
            source_uris=(capture_uri(session, event),),
            thread=session,
            supersedes=previous.row_id if previous else None,
            meta={"capture": "looked_at", "session": session, "event": event, "looked_at": items},
        )
    )
    return (row,)


async def _current(memory: Memory, *, namespace: str, session: str) -> Row | None:
    try:
        recent = await memory.recent(namespace=namespace, limit=_LOOKBACK)
    except NamespaceNotFound:
        return None
    for row in recent:
        if row.meta.get("capture") == "looked_at" and row.meta.get("session") == session:
            return row
    return None
