"""The control API's log: when `phi run` started and when it was paused or resumed.

One JSON object per line in `<home>/control.log`, appended by the control API and read by
the agent's [OPERATIONAL HISTORY] block, so phi knows when its operator last stepped in.
Lines that do not parse (a write cut short by a crash) are skipped when reading.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final, Literal, get_args

import anyio

from phi.memory.model import utc_now
from phi.private import private_mkdirs, private_opener

__all__ = ["CONTROL_LOG", "ControlEvent", "ControlEventKind", "ControlLog"]

CONTROL_LOG: Final = "control.log"
"""Name of the log's file under phi's home."""

ControlEventKind = Literal["started", "paused", "resumed"]
_KINDS: Final = frozenset(get_args(ControlEventKind))


@dataclass(frozen=True, kw_only=True)
class ControlEvent:
    """One line of the log."""

    kind: ControlEventKind
    """`started` (a `phi run` process began: a restart), `paused` or `resumed`."""
    at: datetime
    """When it happened (UTC)."""


@dataclass(frozen=True, kw_only=True)
class ControlLog:
    """The log file at `path`."""

    path: Path

    async def record(self, kind: ControlEventKind, *, at: datetime | None = None) -> ControlEvent:
        """Append one event (the folder is created when missing)."""
        event = ControlEvent(kind=kind, at=at or utc_now())
        line = json.dumps({"kind": event.kind, "at": event.at.isoformat()}) + "\n"
        await anyio.to_thread.run_sync(private_mkdirs, self.path.parent)
        async with await anyio.open_file(self.path, "a", opener=private_opener) as file:
            await file.write(line)
        return event

    async def events(self) -> list[ControlEvent]:
        """Every readable event, oldest first; none when the file does not exist yet."""
        path = anyio.Path(self.path)
        if not await path.exists():
            return []
        found = []
        for line in (await path.read_text()).splitlines():
            try:
                raw = json.loads(line)
                kind, at = raw["kind"], datetime.fromisoformat(raw["at"])
            except (ValueError, KeyError, TypeError):
                continue
            if kind in _KINDS and at.tzinfo is not None:
                found.append(ControlEvent(kind=kind, at=at))
        return found
