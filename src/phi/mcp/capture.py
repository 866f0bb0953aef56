"""Automatic ingestion for agent sessions (seed 004): capture everything, decide nothing.

A client hook sends each conversation turn, decision, tool result, file change or error
(what went wrong, and how it was fixed) as it happens. `capture` cuts it into chunks one
embedding can represent and writes them in the session's thread, so the engine links each
chunk to the previous item of the same session with a temporal edge; nobody has to decide
what is worth remembering.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final, Literal, get_args

from phi.capture.events import capture_uri, is_blank, new_event_id
from phi.errors import InvalidInput, NamespaceNotFound
from phi.memory import Memory, NewRow, Row, Turn

__all__ = [
    "CAPTURE_KINDS",
    "CaptureKind",
    "Captured",
    "capture",
    "chunk_text",
    "latest_in_session",
]

CaptureKind = Literal["turn", "decision", "tool_result", "file_change", "error"]
CAPTURE_KINDS: Final[tuple[CaptureKind, ...]] = get_args(CaptureKind)

CHUNK_CHARS: Final = 1200
"""About 300 tokens: MiniLM reads 256 word pieces, so a longer chunk is embedded truncated
anyway; a little over is fine because prose has fewer word pieces than characters/4."""
MAX_CAPTURE_CHARS: Final = 200_000
"""A guard against a client sending a whole repository as one "file change"."""

_PARAGRAPH: Final = re.compile(r"\n\s*\n")
_RESULT_KINDS: Final = frozenset({"tool_result", "error", "file_change"})
_LOOKBACK: Final = 200
"""How many of the namespace's latest rows are searched for a session's decision."""


def chunk_text(text: str, *, size: int = CHUNK_CHARS) -> list[str]:
    """Split `text` into chunks of at most `size` characters, on paragraph, then line, then
    word boundaries, so each chunk reads as a unit; empty pieces are dropped."""
    pieces: list[str] = []
    for paragraph in _PARAGRAPH.split(text.strip()):
        pieces.extend(_split(paragraph.strip(), size, ("\n", " ")))
    chunks: list[str] = []
    for piece in pieces:
        if chunks and len(chunks[-1]) + 2 + len(piece) <= size:
            chunks[-1] = f"{chunks[-1]}\n\n{piece}"
        elif piece:
            chunks.append(piece)
    return chunks


def _split(text: str, size: int, separators: Sequence[str]) -> list[str]:
    if len(text) <= size:
        return [text] if text else []
    if not separators:
        return [text[i : i + size] for i in range(0, len(text), size)]
    sep, rest = separators[0], separators[1:]
    out: list[str] = []
    current = ""
    for part in text.split(sep):
        candidate = f"{current}{sep}{part}" if current else part
        if len(candidate) <= size:
            current = candidate
            continue
        if current:
            out.append(current)
        if len(part) <= size:
            current = part
        else:
            out.extend(_split(part, size, rest))
            current = ""
    if current:
        out.append(current)
    return [piece.strip() for piece in out if piece.strip()]


@dataclass(frozen=True, kw_only=True)
class Captured:
    """What one `capture` call stored."""

    session: str
    rows: tuple[Row, ...]
    """One row per chunk, in order; temporal edges link them and the session's earlier items."""
    caused_by: str | None = None
    """The row a `causal` edge links to the first chunk, if any."""


def _label(kind: CaptureKind, *, path: str | None, tool: str | None) -> str:
    if kind == "file_change":
        return f"file change {path}" if path else "file change"
    if kind == "tool_result":
        return f"tool result of {tool}" if tool else "tool result"
    if kind == "error":
        return f"error in {tool}" if tool else "error"
    return "decision"


def _check(*, kind: str, session: str, event: str | None, content: str) -> None:
    if kind not in CAPTURE_KINDS:
        raise InvalidInput(f"unknown capture kind {kind!r}; expected one of {CAPTURE_KINDS}")
    if is_blank(session):
        raise InvalidInput(f"blank session id {session!r}; pass the id of the agent session")
    if event is not None and is_blank(event):
        raise InvalidInput(f"blank event id {event!r}; pass the id of the event, or none")
    if len(content) > MAX_CAPTURE_CHARS:
        raise InvalidInput(
            f"capture of {len(content)} characters is over {MAX_CAPTURE_CHARS}; send it in parts"
        )


async def capture(
    memory: Memory,
    *,
    namespace: str,
    session: str,
    kind: CaptureKind,
    content: str,
    speaker: str | None = None,
    by_agent: bool = False,
    path: str | None = None,
    tool: str | None = None,
    extra_meta: Mapping[str, object] | None = None,
    caused_by: str | None = None,
    event: str | None = None,
    supersedes: Sequence[str] = (),
    at: datetime | None = None,
) -> Captured:
    """Chunk and store one item of a session in thread `session` of `namespace`.

    A `turn` is stored verbatim as a high-trust `interaction` (one turn per chunk, with its
    speaker); the other kinds are stored as `note` rows tagged with their kind.
    `extra_meta` adds keys to each row's `meta` (a hook's `tool_use_id`).

    Each row's source is `capture://<session>/<event>` and its `meta` names both, so the
    same text sent by two sessions, or twice by one, makes rows of its own with links of its
    own. `event` is the item's id (a hook event's, given when it was queued, so storing it
    again makes no duplicate); without it every call is a new event.

    A `causal` edge links `caused_by` (a row id) to the first chunk; without it, a
    `tool_result`, `error` or `file_change` is linked to the session's latest `decision`,
    so "why did we do X" finds both the decision and what came of it.

    Each row of `supersedes` (ids, in this namespace) is marked superseded by the first
    chunk, with a `supersedes` edge: what this item sets reverses what they set. `at` is
    when it happened (a transcript's timestamp), if not now.
    """
    _check(kind=kind, session=session, event=event, content=content)
    chunks = chunk_text(content)
    if not chunks:
        raise InvalidInput("empty content; nothing to capture")
    event = event or new_event_id()
    source = (capture_uri(session, event),)
    meta: dict[str, object] = {
        "capture": kind,
        "session": session,
        "event": event,
        "chunks": len(chunks),
    }
    if path:
        meta["path"] = path
    if tool:
        meta["tool"] = tool
    meta.update(extra_meta or {})
    rows: list[NewRow] = []
    for index, chunk in enumerate(chunks):
        chunk_meta = {**meta, "chunk": index}
        if kind == "turn":
            if not speaker or not speaker.strip():
                raise InvalidInput("a turn needs its speaker (e.g. 'user' or 'assistant')")
            rows.append(
                NewRow.interaction(
                    [Turn(speaker=speaker, text=chunk, by_phi=by_agent)],
                    namespace=namespace,
                    source_uris=source,
                    thread=session,
                    meta=chunk_meta,
                    created_at=at,
                )
            )
        else:
            rows.append(
                NewRow(
                    content=f"{_label(kind, path=path, tool=tool)}: {chunk}",
                    namespace=namespace,
                    kind="note",
                    tags=(kind,),
                    source_uris=source,
                    thread=session,
                    meta=chunk_meta,
                    created_at=at,
                )
            )
    if caused_by is None and kind in _RESULT_KINDS:
        decision = await latest_in_session(memory, namespace=namespace, session=session)
        caused_by = decision.row_id if decision else None
    # One row supersedes one row: the first chunk is given again for each further one, and
    # the store keeps it as one row (same identity) with one `supersedes` edge per old row.
    again = [replace(rows[0], supersedes=old) for old in dict.fromkeys(supersedes)]
    if again:
        rows[0] = again[0]
    stored = tuple((await memory.remember_many([*rows, *again[1:]]))[: len(rows)])
    if caused_by is not None and caused_by != stored[0].row_id:
        await memory.link(caused_by, stored[0].row_id, edge_type="causal")
    return Captured(session=session, rows=stored, caused_by=caused_by)


async def latest_in_session(
    memory: Memory,
    *,
    namespace: str,
    session: str,
    kind: CaptureKind = "decision",
    tool_use_id: str | None = None,
    speaker: str | None = None,
) -> Row | None:
    """The newest row of `session` captured as `kind` (and with `tool_use_id`, or a turn
    of `speaker`, if given), among the namespace's latest rows."""
    try:
        recent = await memory.recent(namespace=namespace, limit=_LOOKBACK)
    except NamespaceNotFound:
        return None  # the session's first item in a new namespace
    for row in recent:
        meta = row.meta
        if meta.get("session") != session or meta.get("capture") != kind:
            continue
        if tool_use_id is not None and meta.get("tool_use_id") != tool_use_id:
            continue
        turns = meta.get("turns")
        said_by = turns[0].get("speaker") if isinstance(turns, list) and turns else None
        if speaker is None or said_by == speaker:
            return row
    return None
