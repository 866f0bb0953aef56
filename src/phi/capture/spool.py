"""The capture spool: hook events queue in a file first, so none is lost to a busy store.

`phi capture` appends each event to `<home>/capture/spool.jsonl` (a few milliseconds) and
returns; a drainer (a detached `phi capture --drain`, or the session-start hook, which
needs everything stored before it preloads) stores them in order. An event leaves the
spool only after it was stored: a drainer that meets a locked store stops and leaves the
rest for the next one. A drainer killed between storing and advancing the offset stores
that event again on the next run, which is harmless: the same text and sources make one
row, and an edge that exists keeps its weight.

Two POSIX file locks keep this safe across processes: the spool file's own lock around an
append or a truncation, and `drain.lock`, held by the one process draining.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from phi.errors import StoreError, UserError

if TYPE_CHECKING:
    from phi.memory import Memory

__all__ = ["Spool", "SpoolEntry", "drain_into"]

_POLL_S: Final = 0.05


@dataclass(frozen=True, kw_only=True)
class SpoolEntry:
    """One queued hook event."""

    namespace: str
    """Where the event is to be stored."""
    payload: str
    """The hook event exactly as the host wrote it (one JSON object)."""


@dataclass(frozen=True, kw_only=True)
class Spool:
    """The queue of hook events under one directory (normally `<home>/capture`)."""

    directory: Path

    @property
    def path(self) -> Path:
        return self.directory / "spool.jsonl"

    @property
    def _offset_path(self) -> Path:
        return self.directory / "spool.offset"

    def append(self, entry: SpoolEntry) -> None:
        """Queue `entry` durably (flushed and fsynced before returning)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"namespace": entry.namespace, "payload": entry.payload}) + "\n"
        with self.path.open("a", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def pending(self) -> int:
        """How many events wait to be stored."""
        return sum(1 for _ in self._entries(self._offset()))

    @contextmanager
    def draining(self, *, wait_s: float) -> Iterator[bool]:
        """Hold the drain lock; yields False if another drainer kept it for `wait_s`."""
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / "drain.lock").open("a") as lock:
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(_POLL_S)
            try:
                yield True
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    async def drain(self, store_one: Callable[[SpoolEntry], Awaitable[bool]]) -> int:
        """Store queued events in order with `store_one` (call inside `draining`).

        `store_one` returns False when the store cannot take the event now; draining stops
        there and the event stays queued. Returns how many events were stored.
        """
        stored = 0
        offset = self._offset()
        for end, entry in self._entries(offset):
            if not await store_one(entry):
                return stored
            self._set_offset(end)
            stored += 1
        self._truncate_if_done()
        return stored

    def _entries(self, offset: int) -> Iterator[tuple[int, SpoolEntry]]:
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            handle.seek(offset)
            for raw in handle:
                if not raw.endswith(b"\n"):
                    return  # an append in progress; the next drain gets it whole
                offset += len(raw)
                data = json.loads(raw)
                yield offset, SpoolEntry(namespace=data["namespace"], payload=data["payload"])

    def _offset(self) -> int:
        try:
            return int(self._offset_path.read_text())
        except FileNotFoundError:
            return 0

    def _set_offset(self, offset: int) -> None:
        tmp = self._offset_path.with_suffix(".tmp")
        tmp.write_text(str(offset))
        os.replace(tmp, self._offset_path)

    def _truncate_if_done(self) -> None:
        """Empty the spool once every event in it is stored, so it never grows for good."""
        if not self.path.exists():
            return
        with self.path.open("r+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            if os.fstat(handle.fileno()).st_size == self._offset():
                handle.truncate(0)
                self._set_offset(0)


async def drain_into(memory: Memory, spool: Spool, *, err: TextIO) -> int:
    """Store `spool`'s queued events in `memory` (call inside `spool.draining`).

    A locked store stops the drain (the events wait for the next one); an event the store
    refuses for its content is reported on stderr and dropped, so one bad event cannot hold
    back every later one.
    """
    from phi.capture.hooks import apply_event, parse_event

    async def store_one(entry: SpoolEntry) -> bool:
        try:
            await apply_event(memory, parse_event(entry.payload), namespace=entry.namespace)
        except StoreError as exc:
            print(
                f"phi capture: {spool.pending()} event(s) queued for later: {exc}",
                file=err,
            )
            return False
        except UserError as exc:
            print(f"phi capture: dropped an event the store refused: {exc}", file=err)
        return True

    return await spool.drain(store_one)
