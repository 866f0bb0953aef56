"""What one tick of the poller did."""

from __future__ import annotations

from dataclasses import dataclass, field

from phi.agent.deps import PhiPost
from phi.atproto import Notification
from phi.runtime.schedules import Job

__all__ = ["TickReport"]


@dataclass
class TickReport:
    """What one tick did (for logs, tests and the sandbox's stream)."""

    admitted: list[Notification] = field(default_factory=list)
    dropped: list[tuple[Notification, str]] = field(default_factory=list)
    """Kept from phi, with why (screened out, or its post deleted before the tick)."""
    replies: list[PhiPost] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    """One line per thing phi did in the tick's runs (tool calls that acted or failed)."""
    pending: list[Notification] = field(default_factory=list)
    """Left unhandled by a failed run: waiting in the pending queue for a later tick."""
    set_aside: list[Notification] = field(default_factory=list)
    """Set aside by this tick's failed run, after their last allowed failure."""
    jobs: list[Job] = field(default_factory=list)
    output: str | None = None
    seconds: float = 0.0
    """Wall time of the tick."""
    model_seconds: float = 0.0
    """Of which waiting on the agent's model (when it is a `TimedModel`)."""
