"""The hook command's full path: what `python -m phi.capture` does when the resident
process did not take the event (`phi.capture._fast`), or was asked for something else
(`--wait`, `--drain`, `--no-recall`, `--resident`...)."""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path
from typing import BinaryIO, NoReturn

from phi.capture._check import MAX_EVENT_BYTES
from phi.capture._run import (
    BACKGROUND_WAIT_S,
    BAD_EVENT_EXIT,
    HookOptions,
    default_spool_dir,
    drain,
    run_hook,
)
from phi.capture.hosts import host_named
from phi.capture.resident import DEFAULT_IDLE_S, IDLE_ENV, Resident
from phi.errors import InvalidInput

__all__ = ["full"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line and exit 1: argparse's exit 2 would block the host's tool call.
        print(f"phi capture: {message}", file=sys.stderr)
        raise SystemExit(BAD_EVENT_EXIT)


def full(
    argv: list[str], stdin: BinaryIO, *, head: bytes | None = None, event_id: str | None = None
) -> int:
    """The hook without the fast path: parse, queue here, start or nudge the resident.

    `head` is what the fast path read of `stdin` already (the event's start), `event_id`
    the id it gave the event (`phi.capture._fast.hand_over`)."""
    if head is not None:
        stdin = io.BytesIO(head) if len(head) <= MAX_EVENT_BYTES else _joined(head, stdin)
    parser = _Parser(
        prog="python -m phi.capture",
        description="Capture one agent-host hook event (JSON on stdin) into phi's memory.",
    )
    parser.add_argument("--db", help="memory store (default: $PHI_HOME/memory.db)")
    parser.add_argument(
        "--namespace", help="where sessions go (default: the project's, from the event's cwd)"
    )
    parser.add_argument("--wait", action="store_true", help="store before returning")
    parser.add_argument("--drain", action="store_true", help="store queued events only")
    parser.add_argument(
        "--budget-tokens", "--budget", type=int, default=1500, help="context size (tokens)"
    )
    parser.add_argument(
        "--no-recall",
        dest="recall",
        action="store_false",
        help="print only the session-start preload, as text (no prompt recall, no resident)",
    )
    parser.add_argument("--resident", action="store_true", help="run the resident process")
    parser.add_argument("--lock-fd", type=int, help=argparse.SUPPRESS)  # from `resident.start`
    parser.add_argument("--spool", type=Path, help="queue directory ($PHI_HOME/capture)")
    parser.add_argument("--host", default="claude-code", help="whose hook events (hosts.HOSTS)")
    args = parser.parse_args(argv)
    try:  # not argparse's `choices`: its exit 2 would block the host's every tool call
        host = host_named(args.host)
    except InvalidInput as exc:
        print(f"phi capture: {exc}", file=sys.stderr)
        return BAD_EVENT_EXIT
    if not 50 <= args.budget_tokens <= 20_000:
        print(
            f"phi capture: --budget {args.budget_tokens} is out of range 50-20000", file=sys.stderr
        )
        return BAD_EVENT_EXIT
    options = HookOptions(
        spool_dir=args.spool or default_spool_dir(),
        db=args.db,
        namespace=args.namespace,
        wait=args.wait,
        budget_tokens=args.budget_tokens,
        host=host,
        recall=args.recall,
        event_id=event_id,
    )
    if args.resident:
        from phi.capture._serve import serve

        return serve(
            Resident(spool_dir=options.spool_dir, db=options.db),
            idle_s=_idle_s(os.environ.get(IDLE_ENV)),
            err=sys.stderr,
            lock_fd=args.lock_fd,
        )
    if args.drain:
        drain(options, wait_s=BACKGROUND_WAIT_S, err=sys.stderr)
        return 0
    return run_hook(stdin, options, out=sys.stdout, err=sys.stderr)


def _idle_s(value: str | None) -> float:
    try:
        seconds = float(value) if value else DEFAULT_IDLE_S
    except ValueError:
        print(f"phi capture: {IDLE_ENV}={value!r} is not a number of seconds", file=sys.stderr)
        return DEFAULT_IDLE_S
    return seconds if seconds > 0 else DEFAULT_IDLE_S


class _Joined(io.RawIOBase):
    """`head` (already read), then the rest of `tail`."""

    def __init__(self, head: bytes, tail: BinaryIO) -> None:
        self.head, self.tail = head, tail

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.head:
            size = min(len(buffer), len(self.head))
            buffer[:size] = self.head[:size]
            self.head = self.head[size:]
            return size
        chunk = self.tail.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def _joined(head: bytes, tail: BinaryIO) -> BinaryIO:
    """The event as read from its start: `head`, then what `tail` still holds."""
    return io.BufferedReader(_Joined(head, tail))
