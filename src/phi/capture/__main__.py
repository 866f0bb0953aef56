"""`python -m phi.capture`: the hook command, without the `phi` CLI's imports.

The same as `phi capture`, for hosts that run a hook on every tool call: it starts in a
fraction of the time because it loads neither typer nor the rest of the CLI. Unlike
`phi capture` it answers prompts and session starts from the project's memory through the
resident process (`--no-recall`: as `phi capture` does), and stores each event in the
project's own namespace unless `--namespace` or `$PHI_CAPTURE_PROJECT` names one.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
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
    return run_hook(sys.stdin.buffer, options, out=sys.stdout, err=sys.stderr)


def _idle_s(value: str | None) -> float:
    try:
        seconds = float(value) if value else DEFAULT_IDLE_S
    except ValueError:
        print(f"phi capture: {IDLE_ENV}={value!r} is not a number of seconds", file=sys.stderr)
        return DEFAULT_IDLE_S
    return seconds if seconds > 0 else DEFAULT_IDLE_S


if __name__ == "__main__":
    sys.exit(main())
