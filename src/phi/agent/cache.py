"""Per-block caches of the system prompt, shared across runs of one process.

Canonical reads (goals, self state, operations) are cheap but not free: a 10-second poll must
not hammer the PDS, so their blocks are cached for minutes. Derived blocks (the
self-awareness line from the small model) live longer but are keyed by what they were derived
from (the latest post, the goals), so a new post or a goal change invalidates them at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

__all__ = ["PromptCaches"]


@dataclass
class _Entry:
    key: str
    value: str
    at: datetime


@dataclass
class PromptCaches:
    """Rendered blocks by name, each valid for its time-to-live and its key."""

    _entries: dict[str, _Entry] = field(default_factory=dict)

    async def get(
        self,
        name: str,
        *,
        now: datetime,
        ttl: timedelta,
        render: Callable[[], Awaitable[str]],
        key: str = "",
    ) -> str:
        """The cached block `name`, rendered again when older than `ttl` or made for another key."""
        entry = self._entries.get(name)
        if entry is not None and entry.key == key and now - entry.at < ttl:
            return entry.value
        value = await render()
        self._entries[name] = _Entry(key=key, value=value, at=now)
        return value

    def invalidate(self, *names: str) -> None:
        """Forget the named blocks (all of them when none is named): phi just changed them."""
        if not names:
            self._entries.clear()
        for name in names:
            self._entries.pop(name, None)
