"""Which notifications phi looks at: its own are dropped, allow and deny lists, a per-author
rate limit.

Pure logic with the clock passed in (`at`), so the poller decides what "now" is and the tests
need no sleeping. Nothing here touches the network; `WindowState` keeps the rate limit's
window in phi's memory so a restart does not let a flooding author start over.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final, Literal

from phi.atproto import Notification
from phi.config import Settings
from phi.memory import Memory
from phi.memory.model import utc_now

__all__ = [
    "STATE_SCOPE",
    "Admission",
    "Admitted",
    "AuthorFilter",
    "AuthorRateLimit",
    "Dropped",
    "FilterRefusal",
    "WindowState",
]

FilterRefusal = Literal["deny list", "not on allow list"]
"""Why `AuthorFilter` refuses an author."""


@dataclass(frozen=True, kw_only=True)
class Admitted:
    """One admission counted against an author's limit."""

    at: datetime
    """When it was admitted (the poller's clock)."""
    event: str | None = None
    """What was admitted (a notification's URI), so screening it again does not count twice."""


class AuthorRateLimit:
    """A sliding-window limit per author DID.

    At most `per_hour` admissions per author in any `window` (one hour by default; with
    another window `per_hour` means "per window"). Refused attempts are not recorded, so an
    author who keeps trying is admitted again as soon as their oldest admission leaves the
    window. An `event` admitted before is admitted again without counting: a batch that
    failed before phi saw it is screened again on the next tick.
    """

    def __init__(self, per_hour: int = 30, *, window: timedelta = timedelta(hours=1)) -> None:
        if per_hour < 1:
            raise ValueError(f"per_hour must be at least 1, got {per_hour!r}")
        if window <= timedelta(0):
            raise ValueError(f"window must be positive, got {window!r}")
        self.per_hour = per_hour
        self.window = window
        self._admitted: dict[str, deque[Admitted]] = {}
        self._swept_at: datetime | None = None

    def admit(self, author_did: str, at: datetime, *, event: str | None = None) -> bool:
        """Record one event from `author_did` at `at` if the author is under the limit.

        Args:
            author_did: Who it is from.
            at: When (the window ends there).
            event: What it is (a notification's URI); one already admitted in the window is
                admitted again without counting.

        Returns:
            `True` if admitted (and counted), `False` if the author already had `per_hour`
            admissions in the window ending at `at`.
        """
        self._sweep(at)
        times = self._admitted.setdefault(author_did, deque())
        _expire(times, at - self.window)
        if event is not None and any(a.event == event for a in times):
            return True
        if len(times) >= self.per_hour:
            return False
        times.append(Admitted(at=at, event=event))
        return True

    def count(self, author_did: str, at: datetime) -> int:
        """Admissions of `author_did` in the window ending at `at`."""
        times = self._admitted.get(author_did, deque())
        return sum(1 for a in times if a.at > at - self.window)

    def snapshot(self) -> dict[str, list[Admitted]]:
        """Every admission held, per author, oldest first (what `WindowState` saves)."""
        return {did: list(times) for did, times in self._admitted.items() if times}

    def restore(self, admitted: Mapping[str, Sequence[Admitted]]) -> None:
        """Add admissions saved by an earlier run (those already held are not doubled)."""
        for did, saved in admitted.items():
            held = self._admitted.setdefault(did, deque())
            merged = set(held) | set(saved)
            held.clear()
            held.extend(sorted(merged, key=lambda a: a.at))

    @property
    def tracked_authors(self) -> int:
        """Authors whose admissions are held: those of the last window or two."""
        return len(self._admitted)

    def describe(self) -> str:
        """The limit as a reason fragment: `30/hour`, or `5 per 0:10:00`."""
        if self.window == timedelta(hours=1):
            return f"{self.per_hour}/hour"
        return f"{self.per_hour} per {self.window}"

    def _sweep(self, at: datetime) -> None:
        # Authors seen once would otherwise stay in memory forever; one pass per window
        # keeps the map to the authors of the last window or two.
        if self._swept_at is not None and at - self._swept_at < self.window:
            return
        self._swept_at = at
        horizon = at - self.window
        for did in list(self._admitted):
            times = self._admitted[did]
            _expire(times, horizon)
            if not times:
                del self._admitted[did]


def _expire(times: deque[Admitted], horizon: datetime) -> None:
    while times and times[0].at <= horizon:
        times.popleft()


logger = logging.getLogger("phi.runtime")

STATE_SCOPE: Final = "rate-limit"
"""The memory state scope of the rate limit's window."""


class WindowState:
    """The rate limit's window, kept in phi's memory between runs.

    The one place the runtime reads and writes the memory store for it, so moving the
    storage (to a `Memory` method, or another store) changes only this class.
    """

    def __init__(self, memory: Memory, *, key: str = "authors") -> None:
        self.memory = memory
        self.key = key

    async def load(self) -> dict[str, list[Admitted]]:
        """The admissions saved last, per author (none when nothing was saved yet)."""
        entry = await self.memory.state.read(STATE_SCOPE, self.key)
        if entry is None:
            return {}
        try:
            saved: dict[str, list[list[str | None]]] = json.loads(entry.value)
            return {
                did: [
                    Admitted(at=datetime.fromisoformat(str(at)), event=event) for at, event in items
                ]
                for did, items in saved.items()
            }
        except (ValueError, TypeError, AttributeError) as exc:
            # An unreadable window must not stop phi: it starts over, and says so.
            logger.warning("rate-limit window %r unreadable, starting empty: %s", self.key, exc)
            return {}

    async def save(self, admitted: Mapping[str, Sequence[Admitted]]) -> None:
        """Replace what is saved with `admitted` (the limiter's `snapshot()`)."""
        value = {
            did: [[a.at.isoformat(), a.event] for a in items] for did, items in admitted.items()
        }
        # Older versions are of no use: keep the last two (one to fall back on).
        await self.memory.state.write(
            STATE_SCOPE, self.key, json.dumps(value, sort_keys=True), at=utc_now(), keep=2
        )


def _normalize(name: str) -> str:
    """A handle or DID as compared: handles lower-cased without a leading `@`, DIDs as given."""
    name = name.strip().removeprefix("@")
    return name if name.startswith("did:") else name.lower()


@dataclass(frozen=True, kw_only=True)
class AuthorFilter:
    """Allow and deny lists of handles or DIDs.

    Handles match case-insensitively and may be written with a leading `@`; DIDs match
    exactly. The deny list wins; an allow list, when set, admits only its members. An empty
    allow list admits nobody: use `None` to admit everyone.
    """

    allow: frozenset[str] | None = None
    """The only authors admitted, or `None` for everyone."""
    deny: frozenset[str] = frozenset()
    """Authors never admitted."""

    def __post_init__(self) -> None:
        if self.allow is not None:
            object.__setattr__(self, "allow", frozenset(_normalize(n) for n in self.allow))
        object.__setattr__(self, "deny", frozenset(_normalize(n) for n in self.deny))

    @classmethod
    def from_settings(cls, settings: Settings) -> AuthorFilter:
        """The filter of `allow_handles` and `deny_handles` (an empty allow list: everyone)."""
        return cls(
            allow=frozenset(settings.allow_handles) or None,
            deny=frozenset(settings.deny_handles),
        )

    def refusal(self, did: str, handle: str) -> FilterRefusal | None:
        """Why the author is refused, or `None` if the filter admits them."""
        names = {_normalize(did), _normalize(handle)}
        if names & self.deny:
            return "deny list"
        if self.allow is not None and not names & self.allow:
            return "not on allow list"
        return None

    def allows(self, did: str, handle: str) -> bool:
        """Whether an author, known by DID and handle, passes both lists."""
        return self.refusal(did, handle) is None


@dataclass(frozen=True, kw_only=True)
class Dropped:
    """A notification `Admission.screen` kept from phi, and why."""

    notification: Notification
    """The notification."""
    reason: str
    """`own`, `deny list`, `not on allow list` or `rate limit: 30/hour from @handle`."""


@dataclass(frozen=True, kw_only=True)
class Admission:
    """The screen between `listNotifications` and the agent.

    In order: phi's own notifications are dropped, then the author filter, then the rate
    limit, so only notifications that got past the lists count against an author's limit.
    Nobody is exempt from the rate limit, the owner included.
    """

    self_did: str
    """phi's own DID: notifications it authored are always dropped."""
    author_filter: AuthorFilter = field(default_factory=AuthorFilter)
    """Allow and deny lists."""
    rate_limit: AuthorRateLimit = field(default_factory=AuthorRateLimit)
    """The per-author limit; it keeps state, so one `Admission` lives as long as the poller
    (which saves the window to memory with `WindowState`, so it also outlives a restart)."""

    @classmethod
    def from_settings(cls, settings: Settings, *, self_did: str) -> Admission:
        """The screen configured by `allow_handles`, `deny_handles` and `rate_limit_per_hour`."""
        return cls(
            self_did=self_did,
            author_filter=AuthorFilter.from_settings(settings),
            rate_limit=AuthorRateLimit(settings.rate_limit_per_hour),
        )

    def screen(
        self, notifications: Iterable[Notification], at: datetime
    ) -> tuple[list[Notification], list[Dropped]]:
        """Split a batch into the notifications phi sees and those it does not.

        Every admitted notification counts against its author's limit at time `at`, so
        screen each notification once.

        Returns:
            The admitted notifications and the dropped ones with their reasons, each in the
            order given.
        """
        admitted: list[Notification] = []
        dropped: list[Dropped] = []
        for notification in notifications:
            reason = self._reason(notification, at)
            if reason is None:
                admitted.append(notification)
            else:
                dropped.append(Dropped(notification=notification, reason=reason))
        return admitted, dropped

    def _reason(self, notification: Notification, at: datetime) -> str | None:
        if notification.author_did == self.self_did:
            return "own"
        refusal = self.author_filter.refusal(notification.author_did, notification.author_handle)
        if refusal is not None:
            return refusal
        if not self.rate_limit.admit(notification.author_did, at, event=notification.uri):
            return f"rate limit: {self.rate_limit.describe()} from @{notification.author_handle}"
        return None
