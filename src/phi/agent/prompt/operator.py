"""Who runs phi and what they last did: [OPERATOR] and [OPERATIONAL HISTORY].

The operator is the configured owner: their handle, DID and profile line, looked up on the
network and cached like the other canonical reads. The history comes from the control
API's log (`phi.agent.control_log`): the last restart and the last pause and resume.
"""

from __future__ import annotations

from datetime import timedelta

from phi.agent.control_log import ControlEvent, ControlEventKind, ControlLog
from phi.agent.deps import PhiDeps
from phi.atproto import NotFound

__all__ = ["operational_history_block", "operator_block"]

OPERATOR_TTL = timedelta(minutes=5)


async def operator_block(deps: PhiDeps) -> str:
    """The owner's handle, DID and profile line; "" when no owner is configured."""
    owner = deps.owner_handle
    if owner is None:
        return ""

    async def render() -> str:
        try:
            profile = await deps.client.get_profile(owner)
        except NotFound:
            return f"[OPERATOR]\n@{owner} (the handle does not resolve right now)"
        line = " — ".join(
            part.strip().replace("\n", " ")
            for part in (profile.display_name, profile.description)
            if part and part.strip()
        )
        return (
            f"[OPERATOR — approves gated actions by liking your requests]\n"
            f"handle: @{profile.handle}\ndid: {profile.did}\nprofile: {line or '(empty)'}"
        )

    return await deps.caches.get("operator", now=deps.now, ttl=OPERATOR_TTL, render=render)


def _last(events: list[ControlEvent], kind: ControlEventKind) -> ControlEvent | None:
    return next((e for e in reversed(events) if e.kind == kind), None)


async def operational_history_block(deps: PhiDeps) -> str:
    """The last restart, pause and resume; "" when the log is not configured or empty."""
    path = deps.config.control_log
    if path is None:
        return ""
    events = await ControlLog(path=path).events()
    if not events:
        return ""
    lines = ["[OPERATIONAL HISTORY — from the control API's log]"]
    labels: tuple[tuple[ControlEventKind, str], ...] = (
        ("started", "last restart"),
        ("paused", "last pause"),
        ("resumed", "last resume"),
    )
    for kind, label in labels:
        event = _last(events, kind)
        shown = f"{deps.age(event.at)} ({event.at:%Y-%m-%d %H:%M} UTC)" if event else "never"
        lines.append(f"{label}: {shown}")
    return "\n".join(lines)
