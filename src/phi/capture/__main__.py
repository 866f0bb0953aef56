"""`python -m phi.capture`: the hook command, without the `phi` CLI's imports.

The same as `phi capture`, for hosts that run a hook on every tool call: it starts in a
fraction of the time because it loads neither typer nor the rest of the CLI.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from phi.capture._run import (
    BACKGROUND_WAIT_S,
    DEFAULT_NAMESPACE,
    HookOptions,
    default_spool_dir,
    drain,
    run_hook,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m phi.capture",
        description="Capture one agent-host hook event (JSON on stdin) into phi's memory.",
    )
    parser.add_argument("--db", help="memory store (default: $PHI_HOME/memory.db)")
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="where sessions go")
    parser.add_argument("--wait", action="store_true", help="store before returning")
    parser.add_argument("--drain", action="store_true", help="store queued events only")
    parser.add_argument("--budget-tokens", type=int, default=1500, help="preload size")
    parser.add_argument("--spool", type=Path, help="queue directory ($PHI_HOME/capture)")
    args = parser.parse_args(argv)
    options = HookOptions(
        spool_dir=args.spool or default_spool_dir(),
        db=args.db,
        namespace=args.namespace,
        wait=args.wait,
        budget_tokens=args.budget_tokens,
    )
    if args.drain:
        drain(options, wait_s=BACKGROUND_WAIT_S, err=sys.stderr)
        return 0
    return run_hook(sys.stdin.buffer, options, out=sys.stdout, err=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
