"""What one hook invocation does: check, queue, then drain in the background or now."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from phi.capture.events import HOOK_EVENTS
from phi.capture.spool import Spool, SpoolEntry
from phi.errors import InvalidInput

if TYPE_CHECKING:
    from phi.memory import Memory

__all__ = ["HookOptions", "check_event", "default_spool_dir", "run_hook"]

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


def check_event(payload: str) -> str:
    """The hook event name in `payload`, or `InvalidInput` saying what is wrong. Cheap on
    purpose: full validation happens when the event is stored."""
    try:
        event = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"hook event is not JSON: {exc}") from None
    if not isinstance(event, dict):
        raise InvalidInput("hook event must be a JSON object")
    name = event.get("hook_event_name")
    if name not in HOOK_EVENTS:
        raise InvalidInput(
            f"unknown hook_event_name {name!r}; expected one of {', '.join(sorted(HOOK_EVENTS))}"
        )
    session = event.get("session_id")
    if not isinstance(session, str) or not session.strip():
        raise InvalidInput("hook event has no session_id")
    return str(name)


def run_hook(payload: str, options: HookOptions, *, out: TextIO, err: TextIO) -> int:
    """Handle one hook event; returns the exit code (never 2: that would block the host)."""
    try:
        name = check_event(payload)
    except InvalidInput as exc:
        print(f"phi capture: {exc}", file=err)
        return 1
    spool = Spool(directory=options.spool_dir)
    spool.append(SpoolEntry(namespace=options.namespace, payload=payload))
    if name == "SessionStart":
        text = drain(options, wait_s=SESSION_START_WAIT_S, preload=True, cwd=_cwd(payload), err=err)
        if text:
            print(text, file=out)
    elif options.wait:
        drain(options, wait_s=SESSION_START_WAIT_S, err=err)
    else:
        detach(options)
    return 0


def _cwd(payload: str) -> str | None:
    cwd = json.loads(payload).get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def detach(options: HookOptions) -> None:
    """Start a drainer that outlives this process, so the host is not kept waiting."""
    args = [sys.executable, "-m", "phi.capture", "--drain", "--spool", str(options.spool_dir)]
    if options.db:
        args += ["--db", options.db]
    subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(options.spool_dir / "drain.log").open("a"),
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
    from phi.config import Settings
    from phi.memory import Memory

    settings = Settings()
    return Memory.open(db or settings.resolved_memory_url(), embedder=settings.make_embedder())


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
