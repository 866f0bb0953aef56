"""What one hook invocation does: check, queue, then drain in the background or now."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Final, TextIO

from phi.capture._check import check_event, read_event
from phi.capture.spool import Spool, SpoolEntry
from phi.errors import InvalidInput
from phi.private import private_opener
from phi.redact import redact_json

if TYPE_CHECKING:
    from phi.memory import Memory

__all__ = ["BAD_EVENT_EXIT", "HookOptions", "default_spool_dir", "run_hook"]

DEFAULT_NAMESPACE: Final = "agent-sessions"
SESSION_START_WAIT_S: Final = 30.0
"""How long a session start waits for a background drain before it preloads anyway."""
BACKGROUND_WAIT_S: Final = 120.0
"""How long a background drainer waits for another one to finish; nobody waits on it."""


@dataclass(frozen=True, kw_only=True)
class HookOptions:
    """How the hook command was called."""

    spool_dir: Path
    """Where events queue (`<home>/capture`)."""
    db: str | None = None
    """The memory store; `None` is the configured default."""
    namespace: str = DEFAULT_NAMESPACE
    """Where sessions are stored and what session start preloads."""
    wait: bool = False
    """Store the event before returning instead of in a background process."""
    budget_tokens: int = 1500
    """Size of the session-start preload."""


def default_spool_dir() -> Path:
    """`$PHI_HOME/capture` (default `~/.phi/capture`).

    Read from the environment directly rather than through `Settings`: pydantic-settings
    alone costs over a second of imports on a busy machine, on every tool call of the host.
    The drainer is handed this same directory, so both sides agree.
    """
    home = os.environ.get("PHI_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".phi") / "capture"


BAD_EVENT_EXIT: Final = 1
"""The exit code for an event the hook refuses. Not 2, the CLI's usual code for bad input:
Claude Code reads a hook's exit 2 as "block this" (the tool call is stopped, the prompt
erased, the agent kept from stopping); any other code only shows the message."""


def run_hook(stdin: BinaryIO, options: HookOptions, *, out: TextIO, err: TextIO) -> int:
    """Handle the hook event on `stdin`; returns the exit code (never 2, see
    `BAD_EVENT_EXIT`). Whatever is wrong is said in one line on `err`."""
    try:
        payload = read_event(stdin)
        event = check_event(payload)
    except InvalidInput as exc:
        print(f"phi capture: {exc}", file=err)
        return BAD_EVENT_EXIT
    spool = Spool(directory=options.spool_dir)
    try:
        # Redacted before it touches the disk (the drain redacts too, as every write does).
        spool.append(SpoolEntry(namespace=options.namespace, payload=redact_json(payload)))
    except OSError as exc:  # a full disk, a read-only home: the host must carry on
        print(f"phi capture: could not queue the event in {spool.path}: {exc}", file=err)
        return BAD_EVENT_EXIT
    if event.name == "SessionStart":
        text = drain(options, wait_s=SESSION_START_WAIT_S, preload=True, cwd=event.cwd, err=err)
        if text:
            print(text, file=out)
    elif options.wait:
        drain(options, wait_s=SESSION_START_WAIT_S, err=err)
    else:
        detach(options)
    return 0


def detach(options: HookOptions) -> None:
    """Start a drainer that outlives this process, so the host is not kept waiting."""
    args = [sys.executable, "-m", "phi.capture", "--drain", "--spool", str(options.spool_dir)]
    if options.db:
        args += ["--db", options.db]
    # The child keeps its own copy of the log; this process's is closed, not left to leak.
    with open(options.spool_dir / "drain.log", "a", opener=private_opener) as log:
        subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )


def drain(
    options: HookOptions,
    *,
    wait_s: float,
    err: TextIO,
    preload: bool = False,
    cwd: str | None = None,
) -> str | None:
    """Store what is queued; with `preload`, also return the session-start preload for
    a session in `cwd`. Errors are reported on `err`, never raised to the host.

    (An event naming a bad namespace is refused here, not when queued: checking it up front
    would import the memory engine on every tool call.)"""
    import anyio

    from phi.errors import PhiError

    spool = Spool(directory=options.spool_dir)

    async def go() -> str | None:
        with spool.draining(wait_s=wait_s) as mine:
            if not preload and (not mine or not spool.pending()):
                return None  # another drainer has the queue, or it is empty: skip the embedder
            async with _open_memory(options.db) as memory:
                if mine:
                    from phi.capture.spool import drain_into

                    await drain_into(memory, spool, err=err)
                if not preload:
                    return None
                return await _preload(memory, options, cwd)

    try:
        return anyio.run(go)
    except PhiError as exc:
        # Opening a busy store fails the same way as writing to one: the queue keeps it all.
        print(f"phi capture: {spool.pending()} event(s) queued for later: {exc}", file=err)
        return None


def _open_memory(db: str | None) -> Memory:
    from phi.config import load_settings
    from phi.memory import Memory

    settings = load_settings()  # the edge of the drainer: PHI_HOME is closed (0700) here
    return Memory.open(
        db or settings.resolved_memory_url(),
        embedder=settings.make_embedder(),
        auto_upgrade=settings.auto_upgrade,
    )


async def _preload(memory: Memory, options: HookOptions, cwd: str | None) -> str | None:
    from phi.errors import NamespaceNotFound

    hint = f"work in {Path(cwd).name}" if cwd else "the work ahead"
    try:
        window = await memory.preload(
            hint, namespace=options.namespace, budget_tokens=options.budget_tokens
        )
    except NamespaceNotFound:
        return None  # a first session: nothing to remember yet
    return f"What you remember from earlier sessions (phi's memory):\n\n{window.text}"
