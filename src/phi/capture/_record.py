"""One line of the capture spool: how an event is written, and read back whatever happened.

A record is one JSON object on one line, `{"namespace": …, "payload": …, "event": …}`. The
spool is appended to by hook processes and read by a drainer, so a reader must expect what
a crash or a full disk leaves behind: a record cut short, with the next process's record
glued onto it on the same line, or bytes that are not a record at all. Such a part is
returned as `Unreadable`, to be set aside; the records around it are read as usual.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Final

from phi.capture.events import new_event_id

__all__ = ["RECORD_START", "SpoolEntry", "Unreadable", "decode_line", "encode_entry"]

RECORD_START: Final = b'{"namespace": '
"""The bytes every record begins with. They cannot occur inside a record (a JSON string
escapes its quotes), so wherever they occur a record starts: this is how a record cut short
is told apart from the whole one glued onto it."""


@dataclass(frozen=True, kw_only=True)
class SpoolEntry:
    """One queued hook event."""

    namespace: str
    """Where the event is to be stored."""
    payload: str
    """The hook event as the host wrote it (one JSON object), its secrets redacted by the
    hook before it is queued (`phi.redact.redact_json`)."""
    event: str = field(default_factory=new_event_id)
    """This event's id, given when it is queued: its rows' source names it, so the same
    text from two events makes two rows, and one event stored twice stays one."""


@dataclass(frozen=True, kw_only=True)
class Unreadable:
    """Bytes of the spool that are not a record (a torn append, a disk's garbage)."""

    raw: bytes
    """The bytes exactly as found, for the operator."""
    reason: str
    """Why they cannot be read, in a few words."""


def encode_entry(entry: SpoolEntry) -> bytes:
    """`entry` as one whole line; it starts with `RECORD_START` (`namespace` comes first)."""
    record = {"namespace": entry.namespace, "payload": entry.payload, "event": entry.event}
    return (json.dumps(record) + "\n").encode()


def decode_line(line: bytes) -> list[tuple[int, SpoolEntry | Unreadable]]:
    """The records in one spool line (without its newline), each with the offset in `line`
    where it ends: usually one record; more when a torn record has the next one glued on."""
    starts = _find_all(line, RECORD_START)
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    ends = [*starts[1:], len(line)]
    return [(end, _decode(line[start:end])) for start, end in zip(starts, ends, strict=True)]


def _find_all(data: bytes, needle: bytes) -> list[int]:
    found: list[int] = []
    at = data.find(needle)
    while at != -1:
        found.append(at)
        at = data.find(needle, at + 1)
    return found


def _decode(raw: bytes) -> SpoolEntry | Unreadable:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError too
        return Unreadable(raw=raw, reason=f"not a spool record ({exc})")
    if not isinstance(data, dict):
        return Unreadable(raw=raw, reason="not a spool record (not a JSON object)")
    namespace, payload, event = data.get("namespace"), data.get("payload"), data.get("event")
    if not isinstance(namespace, str) or not isinstance(payload, str):
        return Unreadable(raw=raw, reason="not a spool record (no namespace or payload)")
    if not isinstance(event, str) or not event:
        # Queued by a phi that gave no ids: the line itself names the event, the same on
        # every read, so storing it twice still makes one row.
        event = hashlib.sha256(raw).hexdigest()[:24]
    return SpoolEntry(namespace=namespace, payload=payload, event=event)
