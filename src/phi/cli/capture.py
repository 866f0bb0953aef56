"""`phi capture`: an agent host's hook, run at each event with the event as JSON on stdin.

Exit codes differ from the rest of the CLI on purpose: a Claude Code hook that exits 2
blocks the host's action (a tool call, a prompt), and a memory hook must never do that. A
bad event exits 1 (the host shows the message and carries on); everything else exits 0.
Hosts that hook every tool call should run `python -m phi.capture` (same options), which
skips this CLI's imports.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["capture_command"]


def capture_command(
    db: Annotated[
        str | None, typer.Option("--db", help="Memory store (default: $PHI_HOME/memory.db).")
    ] = None,
    namespace: Annotated[
        str, typer.Option("--namespace", help="Where sessions are stored and preloaded from.")
    ] = "agent-sessions",
    wait: Annotated[
        bool, typer.Option("--wait", help="Store the event before returning (default: later).")
    ] = False,
    drain: Annotated[
        bool, typer.Option("--drain", help="Store queued events only; read nothing on stdin.")
    ] = False,
    budget_tokens: Annotated[
        int, typer.Option("--budget-tokens", help="Size of the session-start preload.")
    ] = 1500,
    spool: Annotated[
        Path | None, typer.Option("--spool", help="Queue directory ($PHI_HOME/capture).")
    ] = None,
) -> None:
    """Capture one hook event (JSON on stdin); at session start, print the preload."""
    from phi.capture._run import BACKGROUND_WAIT_S, HookOptions, default_spool_dir, run_hook
    from phi.capture._run import drain as drain_queue

    options = HookOptions(
        spool_dir=spool or default_spool_dir(),
        db=db,
        namespace=namespace,
        wait=wait,
        budget_tokens=budget_tokens,
    )
    if drain:
        drain_queue(options, wait_s=BACKGROUND_WAIT_S, err=sys.stderr)
        return
    code = run_hook(sys.stdin.buffer, options, out=sys.stdout, err=sys.stderr)
    if code:
        raise typer.Exit(code)
