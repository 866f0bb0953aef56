"""The capture spool: hook events queue in a file first, so none is lost to a busy store.

`phi capture` appends each event to `<home>/capture/spool.jsonl` (a few milliseconds) and
returns; a drainer (a detached `phi capture --drain`, or the session-start hook, which
needs everything stored before it preloads) stores them in order. An event leaves the
spool only after it was stored: a drainer that meets a locked store stops and leaves the
rest for the next one. A drainer killed between storing and advancing the offset stores
that event again on the next run, which is harmless: the event's id is in its rows'
source, so the same event makes the same row, and an edge that exists keeps its weight.

Nothing in the file can stop the queue: bytes that are not a record (an append cut short
by a crash or a full disk) and events the store refuses are set aside in
`rejects.jsonl` beside the spool, logged once, and the drain goes on. A line without its
newline at the end of the file is an append still under way: it is left for the next
drain, and once more data follows it, whatever of it is not a record is set aside.

Two POSIX file locks keep this safe across processes: the spool file's own lock around an
append or a truncation, and `drain.lock`, held by the one process draining.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final, TextIO

from phi.capture._record import SpoolEntry, Unreadable, decode_line, encode_entry
from phi.errors import EmbedderMismatch, StoreError, UserError
from phi.private import private_dir, private_opener, write_private

if TYPE_CHECKING:
    from phi.memory import Memory

__all__ = ["Spool", "SpoolEntry", "drain_into"]

_POLL_S: Final = 0.05


def _lock_within(lock: IO[str], wait_s: float) -> bool:
    """Take `lock` exclusively, trying until `wait_s` has passed; whether it was taken.

    Apart from `Spool.draining` so that mutmut (which leaves decorated functions alone)
    reaches the loop that keeps a second drainer out.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)


@dataclass(frozen=True, kw_only=True)
class Spool:
    """The queue of hook events under one directory (normally `<home>/capture`)."""

    directory: Path

    @property
    def path(self) -> Path:
        return self.directory / "spool.jsonl"

    @property
    def rejects_path(self) -> Path:
        """Where lines that could not be read or stored are kept for the operator: one JSON
        object a line, `{"at", "reason", "line"}`; `line` holds the bytes as found (decode
        with `line.encode("utf-8", "surrogateescape")`)."""
        return self.directory / "rejects.jsonl"

    @property
    def _offset_path(self) -> Path:
        return self.directory / "spool.offset"

    def append(self, entry: SpoolEntry) -> None:
        """Queue `entry` durably (written and fsynced before returning).

        The whole line goes in one `write` at the end of the file, under the file's lock,
        so a reader sees it whole or not yet ended. A write that fails part-way (a full
        disk) is cut back off, so only a crash mid-write can leave a torn line.
        """
        # Other agents' sessions, verbatim: the folder 0700 and every file in it 0600.
        private_dir(self.directory)
        line = encode_entry(entry)
        fd = private_opener(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            try:
                written = os.write(fd, line)
                while written < len(line):  # short only as the disk fills: the next raises
                    written += os.write(fd, line[written:])
                os.fsync(fd)
            except OSError:
                os.ftruncate(fd, size)
                raise
        finally:
            os.close(fd)

    def pending(self) -> int:
        """How many events wait to be stored."""
        return sum(isinstance(item, SpoolEntry) for _, _, item in self._records(self._offset()))

    def rejected(self) -> int:
        """How many lines were set aside so far (see `rejects_path`)."""
        try:
            with self.rejects_path.open("rb") as handle:
                return sum(1 for _ in handle)
        except FileNotFoundError:
            return 0

    @contextmanager
    def draining(self, *, wait_s: float) -> Iterator[bool]:
        """Hold the drain lock; yields False if another drainer kept it for `wait_s`."""
        private_dir(self.directory)
        with open(self.directory / "drain.lock", "a", opener=private_opener) as lock:
            if not _lock_within(lock, wait_s):
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    async def drain(
        self, store_one: Callable[[SpoolEntry], Awaitable[bool]], *, err: TextIO | None = None
    ) -> int:
        """Store queued events in order with `store_one` (call inside `draining`).

        `store_one` returns False when the store cannot take the event now; draining stops
        there and the event stays queued. An event it refuses (raises `UserError`) and
        bytes that are not a record are set aside (`rejects_path`), each reported once on
        `err` (standard error by default). Returns how many events were stored.
        """
        stored = 0
        for end, raw, item in self._records(self._offset()):
            if isinstance(item, Unreadable):
                self._set_aside(raw, what="an unreadable spool line", reason=item.reason, err=err)
            else:
                try:
                    if not await store_one(item):
                        return stored
                    stored += 1
                except UserError as exc:
                    refused = "an event the store refused"
                    self._set_aside(raw, what=refused, reason=str(exc), err=err)
            self._set_offset(end)
        self._truncate_if_done()
        return stored

    def _records(self, offset: int) -> Iterator[tuple[int, bytes, SpoolEntry | Unreadable]]:
        """Each record after `offset` with the offset where it ends and its bytes."""
        if not self.path.exists():
            return
        with self.path.open("rb") as handle:
            handle.seek(offset)
            for raw in handle:
                if not raw.endswith(b"\n"):
                    return  # an append under way: the next drain gets it whole
                parts = decode_line(raw[:-1])
                for index, (end, item) in enumerate(parts):
                    start = parts[index - 1][0] if index else 0
                    last = index == len(parts) - 1
                    # The last part takes the newline with it; a drain stopped before it
                    # resumes exactly where that part starts.
                    yield offset + end + (1 if last else 0), raw[start:end], item
                offset += len(raw)

    def _set_aside(self, raw: bytes, *, what: str, reason: str, err: TextIO | None) -> None:
        """Keep `raw` for the operator (fsynced before the offset moves past it) and say so
        once: the offset then moves on, so no later drain meets it again."""
        record = {
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "reason": f"{what}: {reason}",
            "line": raw.decode("utf-8", "surrogateescape"),
        }
        fd = private_opener(self.rejects_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(fd, (json.dumps(record) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        print(
            f"phi capture: set aside {what} ({len(raw)} bytes; {self.rejected()} kept in"
            f" {self.rejects_path}): {reason}",
            file=err or sys.stderr,
        )

    def _offset(self) -> int:
        try:
            return int(self._offset_path.read_text())
        except FileNotFoundError:
            return 0

    def _set_offset(self, offset: int) -> None:
        # Not synced: a lost offset only stores an event twice, which is harmless.
        write_private(self._offset_path, str(offset), sync=False)

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

    A locked store, or one made by another embedder, stops the drain (the events wait for
    the next one); an event the store refuses for its content is set aside, so one bad
    event cannot hold back every later one.
    """
    from phi.capture.hooks import apply_event, parse_event

    async def store_one(entry: SpoolEntry) -> bool:
        try:
            event = parse_event(entry.payload)
            await apply_event(memory, event, namespace=entry.namespace, event_id=entry.event)
        except (StoreError, EmbedderMismatch) as exc:  # both UserErrors, but of the store
            print(
                f"phi capture: {spool.pending()} event(s) queued for later: {exc}",
                file=err,
            )
            return False
        return True

    return await spool.drain(store_one, err=err)
