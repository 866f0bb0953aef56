"""One hook event through the drainer's path, for the tests of what `apply_event` stores."""

from __future__ import annotations

import json
from typing import Any

from phi.capture.hooks import HookOutcome, apply_event, parse_event
from phi.memory import Memory

NS = "dev"
"""The namespace the tests' events are captured into."""


async def send(
    memory: Memory,
    name: str,
    *,
    session: str = "s1",
    namespace: str = NS,
    event_id: str | None = None,
    **fields: Any,
) -> HookOutcome:
    """One hook event, parsed from its JSON as the queue holds it, then applied."""
    payload = json.dumps({"hook_event_name": name, "session_id": session, **fields})
    return await apply_event(memory, parse_event(payload), namespace=namespace, event_id=event_id)
