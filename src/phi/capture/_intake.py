"""The resident process's side of the fast path (`phi.capture._fast`): a hook's raw event
read off the socket, taken as the full path takes it, and the replies framed.

The event is checked, redacted and queued (fsynced) by the same code as a hook that queues
it itself (`_run.take_event`), with the hook process's working folder and
`$PHI_CAPTURE_PROJECT` sent along, so the event lands in the same namespace either way.
"""

from __future__ import annotations

import io
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from phi.capture._check import CheckedEvent
from phi.capture._fast import MAX_EVENT_BYTES, PROTOCOL
from phi.capture._run import HookOptions, Refused, take_event
from phi.capture.hosts import host_named
from phi.capture.project import PROJECT_ENV
from phi.capture.spool import SpoolEntry
from phi.errors import InvalidInput

__all__ = ["HookRequest", "done_frame", "hung_up", "parse_head", "queued_frame", "take"]

MAX_HEADER_BYTES: Final = 1 << 16
_FIELDS: Final = 6
_EVENT_ID_CHARS: Final = frozenset("0123456789abcdef")


@dataclass(frozen=True, kw_only=True)
class HookRequest:
    """How the hook process was called, as the fast path sends it."""

    event_id: str
    host: str
    namespace: str | None
    project: str | None
    """The hook's `$PHI_CAPTURE_PROJECT` (the resident's own environment is another's)."""
    cwd: str
    """The hook's working folder, for an event that names none."""
    budget_tokens: int


def parse_head(line: bytes) -> tuple[int, int]:
    """The sizes of the header and the event in a request's first line (`hook1 H N`).

    Raises:
        ValueError: not such a line, or sizes past the limits.
    """
    parts = line.split(b" ")
    if len(parts) != 3 or parts[0] != PROTOCOL or not all(p.isdigit() for p in parts[1:]):
        raise ValueError(f"not a hook request: {line[:40]!r}")
    header, event = int(parts[1]), int(parts[2])
    if header > MAX_HEADER_BYTES or event > MAX_EVENT_BYTES:
        raise ValueError(f"hook request sizes {header} and {event} are over the limits")
    return header, event


def parse_header(header: bytes) -> HookRequest:
    """The fields of a request's header (NUL-separated; see `phi.capture._fast`).

    Raises:
        ValueError: not six fields, an event id that is not 24 hex digits, a budget out of
            range, or a working folder that is not absolute.
    """
    fields = [os.fsdecode(part) for part in header.split(b"\0")]
    if len(fields) != _FIELDS:
        raise ValueError(f"a hook request header has {_FIELDS} fields, not {len(fields)}")
    event_id, host, namespace, project, cwd, budget = fields
    if len(event_id) != 24 or not set(event_id) <= _EVENT_ID_CHARS:
        raise ValueError("a hook request's event id is 24 hex digits")
    if not budget.isdigit() or not 50 <= int(budget) <= 20_000:
        raise ValueError(f"budget {budget!r} is out of range 50-20000")
    if not os.path.isabs(cwd):
        raise ValueError("a hook request's working folder is an absolute path")
    return HookRequest(
        event_id=event_id,
        host=host,
        namespace=namespace or None,
        project=project or None,
        cwd=cwd,
        budget_tokens=int(budget),
    )


def take(
    request: HookRequest, data: bytes, *, spool_dir: Path, db: str | None
) -> tuple[CheckedEvent, SpoolEntry, HookOptions]:
    """Check, redact and queue (fsynced) the event `data` as the hook process would have.

    Raises:
        Refused: a bad event (or host), or one that cannot be queued; nothing was queued.
    """
    try:
        host = host_named(request.host)
    except InvalidInput as exc:
        raise Refused(str(exc)) from None
    options = HookOptions(
        spool_dir=spool_dir,
        db=db,
        namespace=request.namespace,
        budget_tokens=request.budget_tokens,
        host=host,
        recall=True,
        event_id=request.event_id,
    )
    environ = {PROJECT_ENV: request.project} if request.project else {}
    event, entry = take_event(io.BytesIO(data), options, cwd=request.cwd, environ=environ)
    return event, entry, options


def hung_up(sock: socket.socket) -> bool:
    """Whether the hook at the other end closed its side (it gave up and queues the event
    itself): taking the event now would queue it twice."""
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def queued_frame(answer_wait_s: float) -> bytes:
    """The event is durable; an answer may take up to `answer_wait_s` more."""
    return b"queued %.3f\n" % answer_wait_s


def done_frame(code: int, out: str = "", err: str = "") -> bytes:
    """The hook's exit code and what it prints on its standard output and error."""
    out_bytes, err_bytes = out.encode(), err.encode()
    return b"done %d %d %d\n" % (code, len(out_bytes), len(err_bytes)) + out_bytes + err_bytes
