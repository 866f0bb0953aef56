"""Agent-host hook events (Claude Code's hooks format) turned into captured memory.

A host runs `phi capture` at each hook and writes the event as JSON on stdin. Each event
becomes `capture` calls (`phi.mcp.capture`, the same path as the MCP tool): a prompt is a
user `turn`, a `PreToolUse` is the agent's `decision`, a `PostToolUse` or
`PostToolUseFailure` its `tool_result`, `error` or `file_change`; at `Stop`,
`SubagentStop`, `PreCompact` and `SessionEnd` every assistant text of the transcript not
kept yet is kept, one turn per entry (the reasoning between tool calls included).

A result is linked to the decision that caused it, and a decision to the prompt that led to
it, by `causal` edges, so "why did we do X" finds both ends. Nothing is cut: long text is
chunked (`MAX_KEPT_CHARS` only bounds abuse). Looking around (`Read`, `Glob`, `Grep`,
`LS`) is one compact row per session (`phi.capture._looked`), not a row per look. A
decision or file change that reverses an earlier one (`phi.capture.supersede`) supersedes
it, so the older one is no longer recalled as current; and with it the turns of earlier
sessions that restate what it set (a closing "Pinned httpx to 0.27.2: ..."), which no claim
names but which would otherwise be told as current in its place.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from phi.capture._looked import LOOKING_TOOLS, looked_at, note_looked
from phi.capture._transcript import Said, assistant_texts
from phi.capture.events import HookName, is_blank
from phi.capture.supersede import (
    Claims,
    claims_from_meta,
    claims_of,
    restates,
    reversal,
    term_digests,
)
from phi.errors import InvalidInput, NamespaceNotFound

if TYPE_CHECKING:
    from phi.memory import Memory, Row

__all__ = ["MAX_KEPT_CHARS", "HookEvent", "HookOutcome", "apply_event", "parse_event"]


MAX_KEPT_CHARS: Final = 200_000
"""What one event's text keeps, chunked (about 170 chunks, seconds to embed): only a guard
against a runaway output (a `cat` of a build artefact); beyond it the head and tail are
kept with a line saying how much was left out. The MCP `capture` refuses more than this."""
PREVIEW_CHARS: Final = 300
"""The new text a decision's one line shows; its `file_change` row keeps all of it."""
SUPERSEDE_LOOKBACK: Final = 2000
"""Latest rows of the namespace searched for what a new decision or change reverses."""
_LOOKBACK: Final = 200
"""How many recent rows of the namespace are searched for the last transcript entry kept."""
_FILE_TOOLS: Final = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_TRANSCRIPT_EVENTS: Final = frozenset({"Stop", "SubagentStop", "PreCompact", "SessionEnd"})


class HookEvent(BaseModel):
    """One hook payload as the host sends it (unknown fields are kept, not refused: hosts
    add fields between versions)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    hook_event_name: HookName
    session_id: str
    cwd: str | None = None
    transcript_path: str | None = None
    source: str | None = None
    prompt: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_response: Any = None
    tool_use_id: str | None = None
    error: str | None = None

    @field_validator("session_id")
    @classmethod
    def _session_named(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("blank session id")
        return value


def parse_event(text: str) -> HookEvent:
    """The hook event in `text` (one JSON object), or `InvalidInput` naming what is wrong."""
    try:
        return HookEvent.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "payload"
        raise InvalidInput(f"hook event refused: {where}: {first['msg']}") from None


@dataclass(frozen=True, kw_only=True)
class HookOutcome:
    """What one event stored."""

    event: HookName
    rows: tuple[Row, ...] = ()
    """The rows written (none for events that carry nothing to remember)."""
    caused_by: str | None = None
    """The row a `causal` edge now links to the first of `rows`."""


def _kept(text: str, limit: int = MAX_KEPT_CHARS) -> str:
    # A tool's output may be binary (a NUL in `cat` of a file): no store keeps a NUL, and
    # memory refuses it, so it becomes U+FFFD here rather than costing the whole event.
    text = text.replace("\x00", "\ufffd")
    if len(text) <= limit:
        return text
    marker = f"\n[... {len(text) - limit} characters left out ...]\n"
    half = (limit - len(marker)) // 2
    return f"{text[:half]}{marker}{text[-half:]}"


def _preview(text: str) -> str:
    if len(text) <= PREVIEW_CHARS:
        return text
    half = PREVIEW_CHARS // 2
    marker = f"\n[... {len(text) - PREVIEW_CHARS} characters left out ...]\n"
    return f"{text[:half]}{marker}{text[-half:]}"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        # Bash results: what the command printed matters, not the flags around it.
        parts = [str(value[k]) for k in ("stdout", "stderr", "content", "output") if value.get(k)]
        if parts:
            return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _decision_text(event: HookEvent) -> str:
    args = event.tool_input or {}
    tool = event.tool_name or "tool"
    if isinstance(args.get("command"), str):
        why = f" ({args['description']})" if isinstance(args.get("description"), str) else ""
        return f"run {tool}{why}: {args['command']}"
    path = args.get("file_path", args.get("notebook_path"))
    if isinstance(path, str):
        change = args.get("new_string", args.get("content", args.get("new_source")))
        if isinstance(args.get("edits"), list):  # MultiEdit
            news = [e.get("new_string") for e in args["edits"] if isinstance(e, dict)]
            change = "\n".join(n for n in news if isinstance(n, str))
        what = f": {_preview(change)}" if isinstance(change, str) and change.strip() else ""
        return f"{tool} {path}{what}"
    return f"call {tool} with {json.dumps(args, ensure_ascii=False, sort_keys=True)}"


def _failed(event: HookEvent) -> bool:
    if event.hook_event_name == "PostToolUseFailure" or event.error:
        return True
    response = event.tool_response
    if isinstance(response, dict):
        if response.get("is_error") or response.get("error") or response.get("interrupted"):
            return True
        code = response.get("exit_code", response.get("returnCode"))
        return isinstance(code, int) and code != 0
    return False


def _meta(event: HookEvent, claims: Claims, reverses: _Reversed | None) -> dict[str, object]:
    meta: dict[str, object] = {"tool_use_id": event.tool_use_id} if event.tool_use_id else {}
    if claims:
        meta["claims"] = claims.as_meta()
    if reverses and reverses.rows:
        meta["reverses"] = reverses.rows
    if reverses and reverses.stale_with:
        meta["stale_with"] = reverses.stale_with
    return meta


@dataclass(frozen=True, kw_only=True)
class _Reversed:
    """What a new decision or change reverses: the rows it sets anew, and the rows that
    go stale with them."""

    rows: dict[str, str]
    """The active rows of its kind whose claims it reverses, each with why."""
    stale_with: dict[str, str]
    """Rows no claim names that hold what those rows set, each with which and how: what
    came of a reversed decision (its tool result or error), and what other sessions said
    or printed that restates it (`supersede.restates`: a closing summary, a commit
    message, a listing of installed versions)."""

    def supersedes(self) -> tuple[str, ...]:
        # The reversed rows first: the first is the one `Row.supersedes` names.
        return (*self.rows, *self.stale_with)


_RESULTS: Final = frozenset({"tool_result", "error"})


async def _reversed(
    memory: Memory, *, namespace: str, session: str, kind: str, claims: Claims
) -> _Reversed:
    """The active rows of `kind` whose claims `claims` reverses, and what goes stale with
    them; words of `session` itself are about making the change, and stay."""
    if not claims:
        return _Reversed(rows={}, stale_with={})
    try:
        recent = await memory.recent(namespace=namespace, limit=SUPERSEDE_LOOKBACK)
    except NamespaceNotFound:
        return _Reversed(rows={}, stale_with={})
    found: dict[str, str] = {}
    reversed_claims: list[tuple[Row, Claims]] = []
    for row in recent:
        # A row never reverses itself (what it wrote and took out are disjoint), so this
        # event's own rows, when it is delivered again, are left alone without a check.
        if row.meta.get("capture") != kind:
            continue
        earlier = claims_from_meta(row.meta.get("claims"))
        why = reversal(claims, earlier) if earlier is not None else None
        if why is not None and earlier is not None:
            found[row.row_id] = why
            reversed_claims.append((row, earlier))
    return _Reversed(rows=found, stale_with=_stale_with(recent, reversed_claims, claims, session))


def _stale_with(
    recent: list[Row], reversed_claims: list[tuple[Row, Claims]], later: Claims, session: str
) -> dict[str, str]:
    """The rows of `recent` that go stale with the reversed rows (see `_Reversed`)."""
    calls = {
        (old.meta.get("session"), old.meta.get("tool_use_id")): old.row_id
        for old, _ in reversed_claims
        if old.meta.get("capture") == "decision" and old.meta.get("tool_use_id")
    }
    worded = [(old.row_id, earlier) for old, earlier in reversed_claims if earlier.terms]
    stale: dict[str, str] = {}
    for row in recent:
        meta = row.meta
        capture = meta.get("capture")
        cause = calls.get((meta.get("session"), meta.get("tool_use_id")))
        if capture in _RESULTS and cause is not None:
            stale[row.row_id] = f"result of {cause}"
            continue
        # What a session said or printed about the state of things; not an error (the
        # failure that motivated a change is history, not a claim about now).
        says = capture in ("turn", "tool_result") or (
            capture == "decision" and not meta.get("claims")
        )
        if not says or not worded or meta.get("session") == session:
            continue
        said = term_digests(row.content)
        old_id = next((i for i, e in worded if restates(said, earlier=e, later=later)), None)
        if old_id is not None:
            stale[row.row_id] = f"restates {old_id}"
    return stale


async def apply_event(
    memory: Memory, event: HookEvent, *, namespace: str, event_id: str | None = None
) -> HookOutcome:
    """Store what `event` carries in `namespace` and link it to its cause.

    `event_id` (the spool's id for this event) goes into the rows' source, so storing the
    same event again makes no duplicate; without it the event is new each time.
    """
    name = event.hook_event_name
    if name == "UserPromptSubmit" and event.prompt and event.prompt.strip():
        return await _prompt(memory, event, namespace=namespace, event_id=event_id)
    if name == "PreToolUse" and event.tool_name and event.tool_name not in LOOKING_TOOLS:
        return await _decision(memory, event, namespace=namespace, event_id=event_id)
    if name in ("PostToolUse", "PostToolUseFailure") and event.tool_name:
        if event.tool_name in LOOKING_TOOLS and not _failed(event):
            rows = await note_looked(
                memory,
                namespace=namespace,
                session=event.session_id,
                item=looked_at(event.tool_name, event.tool_input),
                event_id=event_id,
            )
            return HookOutcome(event=name, rows=rows)
        return await _result(memory, event, namespace=namespace, event_id=event_id)
    if name in _TRANSCRIPT_EVENTS:
        return await _transcript(memory, event, namespace=namespace)
    return HookOutcome(event=name)


async def _prompt(
    memory: Memory, event: HookEvent, *, namespace: str, event_id: str | None
) -> HookOutcome:
    from phi.mcp.capture import capture  # heavy: a hook that only queues never imports it

    done = await capture(
        memory,
        namespace=namespace,
        session=event.session_id,
        event=event_id,
        kind="turn",
        content=_kept(event.prompt or ""),
        speaker="user",
    )
    return HookOutcome(event=event.hook_event_name, rows=done.rows)


async def _decision(
    memory: Memory, event: HookEvent, *, namespace: str, event_id: str | None
) -> HookOutcome:
    from phi.mcp.capture import capture, latest_in_session

    session = event.session_id
    cause = await latest_in_session(
        memory, namespace=namespace, session=session, kind="turn", speaker="user"
    )
    claims = claims_of(event.tool_name or "", event.tool_input or {})
    reverses = await _reversed(
        memory, namespace=namespace, session=session, kind="decision", claims=claims
    )
    done = await capture(
        memory,
        namespace=namespace,
        session=session,
        event=event_id,
        kind="decision",
        content=_kept(_decision_text(event)),
        tool=event.tool_name,
        extra_meta=_meta(event, claims, reverses) or None,
        caused_by=cause.row_id if cause else None,
        supersedes=reverses.supersedes(),
    )
    return HookOutcome(event=event.hook_event_name, rows=done.rows, caused_by=done.caused_by)


async def _result(
    memory: Memory, event: HookEvent, *, namespace: str, event_id: str | None
) -> HookOutcome:
    from phi.mcp.capture import capture, latest_in_session

    session = event.session_id
    # The decision with the same tool_use_id: parallel tool calls interleave. Without one
    # (or with one no decision has), `capture` links the session's latest decision.
    cause = await latest_in_session(
        memory, namespace=namespace, session=session, tool_use_id=event.tool_use_id
    )
    args = event.tool_input or {}
    path = args.get("file_path", args.get("notebook_path"))
    failed = _failed(event)
    body = _as_text(event.error) if event.error else _as_text(event.tool_response)
    claims, reverses = Claims(), None
    if event.tool_name in _FILE_TOOLS and isinstance(path, str) and not failed:
        kind: Literal["file_change", "tool_result", "error"] = "file_change"
        body = _as_text({k: v for k, v in args.items() if k not in ("file_path", "notebook_path")})
        claims = claims_of(event.tool_name or "", args)
        reverses = await _reversed(
            memory, namespace=namespace, session=session, kind=kind, claims=claims
        )
    else:
        kind = "error" if failed else "tool_result"
    done = await capture(
        memory,
        namespace=namespace,
        session=session,
        event=event_id,
        kind=kind,
        content=_kept(body.strip() or "(no output)"),
        tool=event.tool_name,
        path=path if isinstance(path, str) else None,
        extra_meta=_meta(event, claims, reverses) or None,
        caused_by=cause.row_id if cause else None,
        supersedes=reverses.supersedes() if reverses else (),
    )
    return HookOutcome(event=event.hook_event_name, rows=done.rows, caused_by=done.caused_by)


async def _transcript(memory: Memory, event: HookEvent, *, namespace: str) -> HookOutcome:
    """Keep each assistant text of the transcript after the last one kept, once each: an
    entry's id names its rows, so one stored again (the event delivered twice, or a
    transcript read from its start) is the same row."""
    from phi.mcp.capture import capture

    extra = event.model_extra or {}
    path = extra.get("agent_transcript_path") if event.hook_event_name == "SubagentStop" else None
    said = assistant_texts(path if isinstance(path, str) else event.transcript_path)
    last = extra.get("last_assistant_message")
    if not said and isinstance(last, str) and last.strip() and event.hook_event_name == "Stop":
        said = [Said(entry=f"last-{_digest(last)}", text=last)]  # a host without a transcript
    kept = await _kept_entries(memory, namespace=namespace, session=event.session_id)
    start = max((i + 1 for i, s in enumerate(said) if s.entry in kept), default=0)
    rows: list[Row] = []
    for entry in said[start:]:
        done = await capture(
            memory,
            namespace=namespace,
            session=event.session_id,
            # Named by session too: a transcript line without a `uuid` may recur in another.
            event=f"said-{_digest(event.session_id + chr(0) + entry.entry)}",
            kind="turn",
            content=_kept(entry.text),
            speaker="assistant",
            by_agent=True,
            extra_meta={"said": entry.entry},
            at=entry.at,
        )
        rows.extend(done.rows)
    return HookOutcome(event=event.hook_event_name, rows=tuple(rows))


async def _kept_entries(memory: Memory, *, namespace: str, session: str) -> set[str]:
    try:
        recent = await memory.recent(namespace=namespace, limit=_LOOKBACK)
    except NamespaceNotFound:
        return set()
    return {
        str(r.meta["said"]) for r in recent if r.meta.get("session") == session and "said" in r.meta
    }


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
