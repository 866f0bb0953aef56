"""The journal of runs: what every agent run saw, did and cost, kept for a while.

One row per run: the entry point, the exact system prompt (stored once per distinct text,
named by its SHA-256), each tool call with its arguments and result, the model's usage and
the timings, and the outcome. `phi runs list / show` and the web activity page read it.

It lives in its own SQLite file under `PHI_HOME` (`runs.db`), not in the memory store: it
is the operator's log of one process, not memory, and a PostgreSQL memory shared by many
processes should not fill with each one's transcripts. Retention is bounded by count: past
`keep` runs, the oldest go (with the prompts no remaining run names).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, TypeVar

import anyio
from pydantic_ai import capture_run_messages
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
)

from phi.errors import UserError

__all__ = [
    "DEFAULT_KEEP",
    "JournalToolCall",
    "Outcome",
    "RunJournal",
    "RunNotFound",
    "RunRecord",
    "record_of",
]

T = TypeVar("T")

logger = logging.getLogger("phi.runtime")

DEFAULT_KEEP: Final = 2000
"""Runs kept by default: weeks of a busy account, a few MB."""

Outcome = Literal["ok", "failed"]


class RunNotFound(UserError):
    """No journalled run has this id (or it has aged out)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run with id {run_id!r} in the journal (see `phi runs list`)")


@dataclass(frozen=True, kw_only=True)
class JournalToolCall:
    """One tool call the model made in a run, and what came back."""

    tool: str
    """The tool's name."""
    args: str
    """The arguments, as the JSON the model sent."""
    result: str
    """What the tool returned (or the retry message the model got), as text."""
    outcome: str
    """pydantic-ai's outcome of the call: `success`, `retried`, `failed`..."""
    seconds: float | None = None
    """From the model's response to the tool's return, when both were timed."""


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One agent run, as the journal keeps it."""

    run_id: str
    """A fresh id (`phi runs show ID`)."""
    entry: str
    """What started it: notifications, musing, reflection, service_check, review..."""
    started_at: datetime
    seconds: float
    """Wall time of the run."""
    outcome: Outcome
    output: str
    """The run's log line, or the error that ended it."""
    prompt_hash: str
    """SHA-256 of the exact system prompt (base and blocks, joined as sent)."""
    system_prompt: str
    """That prompt's text."""
    tool_calls: tuple[JournalToolCall, ...] = ()
    model: str | None = None
    """The model that answered (its last response's name)."""
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    actions: tuple[str, ...] = ()
    """What phi did, one line each, as the activity log wrote it."""

    def summary(self) -> dict[str, Any]:
        """The record without the prompt and the calls' payloads (for lists)."""
        return {
            "run_id": self.run_id,
            "entry": self.entry,
            "started_at": self.started_at.isoformat(),
            "seconds": round(self.seconds, 3),
            "outcome": self.outcome,
            "output": self.output,
            "tools": [call.tool for call in self.tool_calls],
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    def to_json(self) -> dict[str, Any]:
        """Everything, for `phi runs show --json` and the API."""
        return {
            **self.summary(),
            "prompt_hash": self.prompt_hash,
            "system_prompt": self.system_prompt,
            "requests": self.requests,
            "tool_calls": [
                {
                    "tool": c.tool,
                    "args": c.args,
                    "result": c.result,
                    "outcome": c.outcome,
                    "seconds": c.seconds,
                }
                for c in self.tool_calls
            ],
            "actions": list(self.actions),
        }


def _prompt_of(messages: Sequence[ModelMessage]) -> str:
    """The system prompt as the first request carried it (what `phi.agent.system_prompt`
    shows: the parts with text, joined by blank lines)."""
    for message in messages:
        if isinstance(message, ModelRequest):
            parts = [p.content for p in message.parts if isinstance(p, SystemPromptPart)]
            return "\n\n".join(p for p in parts if p)
    return ""


def _tool_calls(messages: Sequence[ModelMessage]) -> tuple[JournalToolCall, ...]:
    called: dict[str, tuple[ToolCallPart, datetime]] = {}
    out: list[JournalToolCall] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            for part in message.parts:
                if isinstance(part, ToolCallPart):
                    called[part.tool_call_id] = (part, message.timestamp)
            continue
        for ret in message.parts:
            if not isinstance(ret, ToolReturnPart) or ret.tool_call_id not in called:
                continue
            call, asked_at = called.pop(ret.tool_call_id)
            out.append(
                JournalToolCall(
                    tool=call.tool_name,
                    args=call.args_as_json_str(),
                    result=ret.model_response_str(),
                    outcome=str(getattr(ret, "outcome", "success")),
                    seconds=max(0.0, (ret.timestamp - asked_at).total_seconds()),
                )
            )
    # Calls the run never answered (it failed mid-way) are journalled too.
    for call, _ in called.values():
        out.append(
            JournalToolCall(
                tool=call.tool_name, args=call.args_as_json_str(), result="", outcome="unanswered"
            )
        )
    return tuple(out)


def record_of(
    messages: Sequence[ModelMessage],
    *,
    entry: str,
    started_at: datetime,
    seconds: float,
    outcome: Outcome,
    output: str,
    actions: Sequence[str] = (),
) -> RunRecord:
    """The journal's record of one run, from the messages it exchanged."""
    prompt = _prompt_of(messages)
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    return RunRecord(
        run_id=uuid.uuid4().hex[:12],
        entry=entry,
        started_at=started_at,
        seconds=seconds,
        outcome=outcome,
        output=output,
        prompt_hash=hashlib.sha256(prompt.encode()).hexdigest(),
        system_prompt=prompt,
        tool_calls=_tool_calls(messages),
        model=responses[-1].model_name if responses else None,
        requests=len(responses),
        input_tokens=sum(r.usage.input_tokens for r in responses),
        output_tokens=sum(r.usage.output_tokens for r in responses),
        actions=tuple(actions),
    )


_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS prompts (hash TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL UNIQUE,
    entry TEXT NOT NULL,
    started_at TEXT NOT NULL,
    seconds REAL NOT NULL,
    outcome TEXT NOT NULL,
    output TEXT NOT NULL,
    prompt_hash TEXT NOT NULL REFERENCES prompts(hash),
    model TEXT,
    requests INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    tool_calls TEXT NOT NULL,
    actions TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_entry ON runs(entry, seq);
"""

_COLUMNS: Final = (
    "r.run_id, r.entry, r.started_at, r.seconds, r.outcome, r.output, r.prompt_hash, p.text,"
    " r.model, r.requests, r.input_tokens, r.output_tokens, r.tool_calls, r.actions"
)


def _row_to_record(row: tuple[Any, ...]) -> RunRecord:
    (run_id, entry, started, seconds, outcome, output, phash, text, model, requests, i, o) = row[
        :12
    ]
    calls = tuple(JournalToolCall(**c) for c in json.loads(row[12]))
    return RunRecord(
        run_id=run_id,
        entry=entry,
        started_at=datetime.fromisoformat(started),
        seconds=seconds,
        outcome=outcome,
        output=output,
        prompt_hash=phash,
        system_prompt=text,
        tool_calls=calls,
        model=model,
        requests=requests,
        input_tokens=i,
        output_tokens=o,
        actions=tuple(json.loads(row[13])),
    )


@dataclass(frozen=True, kw_only=True)
class RunJournal:
    """The journal file. Each call opens its own connection on a worker thread (runs are
    seconds apart; a held connection would tie the file to one thread)."""

    path: Path
    keep: int = DEFAULT_KEEP
    """How many runs to keep; older ones are deleted as new ones arrive."""

    @classmethod
    def at_home(cls, home: Path, *, keep: int = DEFAULT_KEEP) -> RunJournal:
        """The journal of the phi whose state lives in `home` (`PHI_HOME`)."""
        return cls(path=home / "runs.db", keep=keep)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=10)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
        return conn

    async def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        def work() -> T:
            conn = self._connect()
            try:
                with conn:
                    return fn(conn)
            finally:
                conn.close()

        return await anyio.to_thread.run_sync(work)

    async def add(self, record: RunRecord) -> None:
        """Keep `record`, dropping the oldest runs past `keep`."""
        calls = json.dumps([c.__dict__ for c in record.tool_calls], ensure_ascii=False)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO prompts (hash, text) VALUES (?, ?)",
                (record.prompt_hash, record.system_prompt),
            )
            conn.execute(
                "INSERT INTO runs (run_id, entry, started_at, seconds, outcome, output,"
                " prompt_hash, model, requests, input_tokens, output_tokens, tool_calls, actions)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.run_id,
                    record.entry,
                    record.started_at.astimezone(UTC).isoformat(),
                    record.seconds,
                    record.outcome,
                    record.output,
                    record.prompt_hash,
                    record.model,
                    record.requests,
                    record.input_tokens,
                    record.output_tokens,
                    calls,
                    json.dumps(list(record.actions), ensure_ascii=False),
                ),
            )
            conn.execute(
                "DELETE FROM runs WHERE seq <= (SELECT max(seq) FROM runs) - ?", (self.keep,)
            )
            conn.execute(
                "DELETE FROM prompts WHERE hash NOT IN (SELECT DISTINCT prompt_hash FROM runs)"
            )

        await self._call(write)

    async def recent(self, *, limit: int = 20, entry: str | None = None) -> list[RunRecord]:
        """The newest runs first (of `entry` only, when given)."""
        where, params = ("WHERE r.entry = ?", (entry,)) if entry else ("", ())

        def read(conn: sqlite3.Connection) -> list[RunRecord]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM runs r JOIN prompts p ON p.hash = r.prompt_hash"
                f" {where} ORDER BY r.seq DESC LIMIT ?",
                (*params, limit),
            ).fetchall()
            return [_row_to_record(row) for row in rows]

        return await self._call(read)

    async def get(self, run_id: str) -> RunRecord:
        """One run by id (a unique prefix of it is enough)."""

        def read(conn: sqlite3.Connection) -> list[RunRecord]:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM runs r JOIN prompts p ON p.hash = r.prompt_hash"
                " WHERE r.run_id LIKE ? ESCAPE '\\' LIMIT 2",
                (run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%",),
            ).fetchall()
            return [_row_to_record(row) for row in rows]

        found = await self._call(read) if run_id else []
        if len(found) != 1:
            raise RunNotFound(run_id)
        return found[0]

    async def run(
        self,
        entry: str,
        go: Callable[[], Awaitable[str]],
        *,
        actions: Callable[[], Sequence[str]] = tuple,
    ) -> str:
        """Await `go()` (one agent run) and journal it, whether it returns or raises.

        The journal never changes the run's fate: its own failure to write is logged, and the
        run's exception propagates unchanged.
        """
        started, clock = datetime.now(UTC), time.perf_counter()
        with capture_run_messages() as messages:
            try:
                output = await go()
            except Exception as exc:
                await self._add_quietly(
                    record_of(
                        messages,
                        entry=entry,
                        started_at=started,
                        seconds=time.perf_counter() - clock,
                        outcome="failed",
                        output=f"{type(exc).__name__}: {exc}",
                        actions=actions(),
                    )
                )
                raise
        await self._add_quietly(
            record_of(
                messages,
                entry=entry,
                started_at=started,
                seconds=time.perf_counter() - clock,
                outcome="ok",
                output=output,
                actions=actions(),
            )
        )
        return output

    async def _add_quietly(self, record: RunRecord) -> None:
        try:
            await self.add(record)
        except (sqlite3.Error, OSError) as exc:
            # A full disk must not turn a run that replied into a failed one.
            logger.error("journal: run %s not kept: %s", record.run_id, exc)
