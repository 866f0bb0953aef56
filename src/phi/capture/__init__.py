"""Memory for agent hosts without asking: hook events captured, sessions preloaded.

A host runs `python -m phi.capture` (or `phi capture`) at each hook event with the event as
JSON on stdin. The event is queued in the `Spool` within milliseconds and stored in the
background by `phi.capture.hooks.apply_event`; at session start the queue is drained and
the preload window printed for the host to inject. See `examples/claude-code/settings.json`.

This package imports nothing at the top on purpose: `python -m phi.capture` imports it
before its `__main__`, on every tool call of the host, and the fast path
(`phi.capture._fast`) needs none of it. The names below load on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from phi.capture._check import MAX_EVENT_BYTES, CheckedEvent, check_event
    from phi.capture._run import BAD_EVENT_EXIT, HookOptions, run_hook
    from phi.capture.spool import Spool, SpoolEntry

__all__ = [
    "BAD_EVENT_EXIT",
    "MAX_EVENT_BYTES",
    "CheckedEvent",
    "HookOptions",
    "Spool",
    "SpoolEntry",
    "check_event",
    "run_hook",
]

_HOMES = {
    "MAX_EVENT_BYTES": "phi.capture._check",
    "CheckedEvent": "phi.capture._check",
    "check_event": "phi.capture._check",
    "BAD_EVENT_EXIT": "phi.capture._run",
    "HookOptions": "phi.capture._run",
    "run_hook": "phi.capture._run",
    "Spool": "phi.capture.spool",
    "SpoolEntry": "phi.capture.spool",
}


def __getattr__(name: str) -> object:
    """Each export, imported from its module when first asked for (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
