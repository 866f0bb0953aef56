"""Memory for agent hosts without asking: hook events captured, sessions preloaded.

A host runs `python -m phi.capture` (or `phi capture`) at each hook event with the event as
JSON on stdin. The event is queued in the `Spool` within milliseconds and stored in the
background by `phi.capture.hooks.apply_event`; at session start the queue is drained and
the preload window printed for the host to inject. See `examples/claude-code/settings.json`.

This package imports little at the top on purpose: a hook runs on every tool call, and
importing the memory engine costs seconds on a busy machine. Only the background drainer
and the session-start hook load it.
"""

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
