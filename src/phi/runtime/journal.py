"""The journal of runs: what every agent run saw, did and cost, kept for a while.

One row per run: the entry point, the exact system prompt (stored once per distinct text,
named by its SHA-256), each tool call with its arguments and result, the model's usage and
the timings, and the outcome. `phi runs list / show` and the web activity page read it.
Secrets in any of that text (a token in a tool's result, a password in a post) are replaced
by a marker (`phi.redact`) before it is written, and again when it is read.

It lives in its own SQLite file under `PHI_HOME` (`runs.db`), not in the memory store: it
is the operator's log of one process, not memory, and a PostgreSQL memory shared by many
processes should not fill with each one's transcripts. Retention is bounded by count: past
`keep` runs, the oldest go (with the prompts no remaining run names).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio
from pydantic_ai import capture_run_messages

from phi.errors import UserError
from phi.private import make_private, private_file
from phi.runtime._journal_records import (
    JournalImage,
    JournalToolCall,
    Outcome,
    RunRecord,
    record_of,
)

__all__ = [
    "DEFAULT_KEEP",
    "JournalImage",
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
"""Runs kept by default: weeks of a busy account. Prompts rarely repeat (`[NOW]` changes),
so with 10 KB prompts that is about 21 MB."""


class RunNotFound(UserError):
    """No journalled run has this id (or it has aged out)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(f"no run with id {run_id!r} in the journal (see `phi runs list`)")


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
    actions TEXT NOT NULL,
    images TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS runs_entry ON runs(entry, seq);
"""

_COLUMNS: Final = (
    "r.run_id, r.entry, r.started_at, r.seconds, r.outcome, r.output, r.prompt_hash, p.text,"
    " r.model, r.requests, r.input_tokens, r.output_tokens, r.tool_calls, r.actions, r.images"
)


def _row_to_record(row: tuple[Any, ...]) -> RunRecord:
    run_id, entry, started, seconds, outcome, output, prompt_hash, prompt, *rest = row
    model, requests, input_tokens, output_tokens, calls, actions, images = rest
    return RunRecord(
        run_id=run_id,
        entry=entry,
        started_at=datetime.fromisoformat(started),
        seconds=seconds,
        outcome=outcome,
        output=output,
        prompt_hash=prompt_hash,
        system_prompt=prompt,
        tool_calls=tuple(JournalToolCall(**call) for call in json.loads(calls)),
        model=model,
        requests=requests,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        actions=tuple(json.loads(actions)),
        images=tuple(JournalImage(**image) for image in json.loads(images)),
    ).redacted()  # a journal kept before redaction must not show its secrets either


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
        # The journal holds whole conversations: created 0600 before SQLite opens it (SQLite
        # would make it 0644), so its -wal and -shm, which copy its mode, are private too.
        private_file(self.path)
        conn = sqlite3.connect(self.path, timeout=10)
        conn.execute("PRAGMA journal_mode=WAL")
        make_private(self.path)  # a -wal/-shm an older phi left 0644
        conn.executescript(_SCHEMA)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        if "images" not in columns:  # a journal kept before pictures were passed
            conn.execute("ALTER TABLE runs ADD COLUMN images TEXT NOT NULL DEFAULT '[]'")
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
        """Keep `record`, its secrets redacted, dropping the oldest runs past `keep`."""
        record = record.redacted()
        calls = json.dumps([asdict(c) for c in record.tool_calls], ensure_ascii=False)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO prompts (hash, text) VALUES (?, ?)",
                (record.prompt_hash, record.system_prompt),
            )
            conn.execute(
                "INSERT INTO runs (run_id, entry, started_at, seconds, outcome, output,"
                " prompt_hash, model, requests, input_tokens, output_tokens, tool_calls, actions,"
                " images) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    json.dumps([asdict(i) for i in record.images], ensure_ascii=False),
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
