"""Notifications a failed run left unanswered, kept for a later tick.

`updateSeen` marks seen only up to a time: phi cannot leave one notification unread while
marking those around it. So when a batch's run fails (a provider's 429 or 529, a timeout, a
dropped connection, a bug), the poller marks the batch seen as before and keeps here what the
run had not handled, in phi's memory (key/value state, one value per phi account, so it
outlives a restart). Each waits before its next run, twice as long after each failure up to a
cap (`Backoff`); one that was in `Backoff.attempts` failed runs is set aside: kept and listed
(`phi runs pending`, `GET /api/pending`), never run again by itself and never dropped unseen.

A notification counts as handled when the run replied to it, liked it or reposted it, even if
the run failed afterwards: a retry never does that twice.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import TypeAdapter, ValidationError

from phi.atproto import Notification
from phi.errors import InvalidInput
from phi.memory.model import utc_now

if TYPE_CHECKING:
    from phi.agent.deps import ActivityLog, Batch
    from phi.config import Settings
    from phi.memory import Memory

__all__ = [
    "SET_ASIDE_KEPT",
    "STATE_SCOPE",
    "Backoff",
    "PendingNotification",
    "PendingQueue",
    "PendingStatus",
    "PendingStore",
    "Settled",
    "handled_uris",
    "read_pending",
]

logger = logging.getLogger("phi.runtime")

STATE_SCOPE: Final = "pending-notifications"
"""The memory state scope of the queues; the key is the phi account's DID."""

SET_ASIDE_KEPT: Final = 500
"""Set-aside notifications kept per account: the oldest beyond go, with a warning in the log
(a long outage can set aside many; the queue is rewritten on every change)."""

PendingStatus = Literal["waiting", "set-aside"]
"""`waiting` for its next run, or `set-aside` after its last allowed failure."""

_ERROR_CHARS: Final = 300

LONGEST_WAIT_SECONDS: Final = 365 * 24 * 3600
"""A year: the longest wait `Backoff` accepts. Longer is never meant, and a wait past the
calendar's end would crash the tick that set it (before it marked anything seen)."""


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """How a notification a failed run left unhandled is retried."""

    base_seconds: float = 30.0
    """The wait after its first failed run; doubled after each further one."""
    max_seconds: float = 1800.0
    """The longest wait."""
    attempts: int = 5
    """Failed runs before it is set aside."""

    def __post_init__(self) -> None:
        if self.base_seconds <= 0 or self.max_seconds <= 0 or self.attempts < 1:
            raise InvalidInput(
                f"retry waits must be positive and attempts at least 1, got base "
                f"{self.base_seconds!r}, max {self.max_seconds!r}, attempts {self.attempts!r}"
            )
        if self.max_seconds > LONGEST_WAIT_SECONDS:
            raise InvalidInput(
                f"the longest retry wait must be at most a year ({LONGEST_WAIT_SECONDS} "
                f"seconds), got {self.max_seconds!r}"
            )

    @classmethod
    def from_settings(cls, settings: Settings) -> Backoff:
        """`PHI_RETRY_BASE_SECONDS`, `PHI_RETRY_MAX_SECONDS` and `PHI_RETRY_ATTEMPTS`."""
        return cls(
            base_seconds=settings.retry_base_seconds,
            max_seconds=settings.retry_max_seconds,
            attempts=settings.retry_attempts,
        )

    def wait(self, failures: int) -> timedelta:
        """The wait after `failures` failed runs (1 for the first)."""
        seconds = self.base_seconds
        # Doubled one failure at a time until the longest wait: a long outage's count can
        # neither overflow the float nor stop the doubling short of `max_seconds`.
        for _ in range(failures - 1):
            if seconds >= self.max_seconds:
                break
            seconds *= 2
        return timedelta(seconds=min(seconds, self.max_seconds))


@dataclass(frozen=True, kw_only=True)
class PendingNotification:
    """A notification phi has not handled, after one or more failed runs."""

    notification: Notification
    """As listed by the network (enough to build its batch again)."""
    status: PendingStatus
    failures: int
    """Failed runs it was in, unhandled."""
    first_failed_at: datetime
    last_failed_at: datetime
    retry_at: datetime | None
    """When it may run again; `None` once set aside."""
    error: str
    """What ended the last run it was in (`Type: message`, clipped)."""

    def summary(self) -> dict[str, Any]:
        """The entry for `phi runs pending --json` and `GET /api/pending`."""
        n = self.notification
        return {
            "status": self.status,
            "uri": n.uri,
            "reason": n.reason,
            "author_handle": n.author_handle,
            "text": n.text,
            "failures": self.failures,
            "first_failed_at": self.first_failed_at.isoformat(),
            "last_failed_at": self.last_failed_at.isoformat(),
            "retry_at": self.retry_at.isoformat() if self.retry_at else None,
            "error": self.error,
        }


@dataclass(frozen=True, kw_only=True)
class Settled:
    """A queue after a batch ran, and what changed for the log."""

    queue: PendingQueue
    waiting: list[PendingNotification] = field(default_factory=list)
    """Left unhandled by a failed run: waiting for another."""
    set_aside: list[PendingNotification] = field(default_factory=list)
    """Set aside by this run's failure."""
    trimmed: list[PendingNotification] = field(default_factory=list)
    """Older set-aside entries no longer kept (past `SET_ASIDE_KEPT`)."""


@dataclass(frozen=True, kw_only=True)
class PendingQueue:
    """One phi account's unhandled notifications, oldest failure first."""

    account: str
    """phi's DID."""
    entries: tuple[PendingNotification, ...] = ()

    @property
    def waiting(self) -> list[PendingNotification]:
        return [e for e in self.entries if e.status == "waiting"]

    @property
    def set_aside(self) -> list[PendingNotification]:
        return [e for e in self.entries if e.status == "set-aside"]

    def holds(self, uri: str) -> bool:
        """Whether the notification `uri` is here, waiting or set aside."""
        return any(e.notification.uri == uri for e in self.entries)

    def due(self, now: datetime) -> list[Notification]:
        """The waiting notifications whose wait is over, oldest first."""
        ready = [
            e.notification for e in self.waiting if e.retry_at is not None and e.retry_at <= now
        ]
        return sorted(ready, key=lambda n: n.indexed_at)

    def summaries(self) -> list[dict[str, Any]]:
        """Every entry's `summary()`, with the account."""
        return [{"account": self.account, **e.summary()} for e in self.entries]

    def settle(
        self,
        ran: Sequence[Notification],
        *,
        done: Collection[str],
        failure: str | None,
        now: datetime,
        backoff: Backoff,
    ) -> Settled:
        """The queue after a batch of `ran` went through a run.

        Args:
            ran: The batch's notifications (those that were waiting among them included).
            done: URIs of those that need no other run: handled, or dropped on purpose.
            failure: What ended the run (`None`: it finished, and all of `ran` is done).
            now: The tick's time.
            backoff: When the unhandled ones run again, and how often they may fail.
        """
        before = {e.notification.uri: e for e in self.entries}
        ran_uris = {n.uri for n in ran}
        entries = [e for e in self.entries if e.notification.uri not in ran_uris]
        waiting: list[PendingNotification] = []
        set_aside: list[PendingNotification] = []
        if failure is not None:
            error = failure if len(failure) <= _ERROR_CHARS else failure[: _ERROR_CHARS - 1] + "…"
            for notification in ran:
                if notification.uri in done:
                    continue
                entry = _failed(before.get(notification.uri), notification, error, now, backoff)
                (waiting if entry.status == "waiting" else set_aside).append(entry)
            entries += waiting + set_aside
        kept, trimmed = _trim(entries)
        return Settled(
            queue=replace(self, entries=tuple(kept)),
            waiting=waiting,
            set_aside=set_aside,
            trimmed=trimmed,
        )


def _failed(
    before: PendingNotification | None,
    notification: Notification,
    error: str,
    now: datetime,
    backoff: Backoff,
) -> PendingNotification:
    failures = (before.failures if before else 0) + 1
    if failures >= backoff.attempts:
        return PendingNotification(
            notification=notification,
            status="set-aside",
            failures=failures,
            first_failed_at=before.first_failed_at if before else now,
            last_failed_at=now,
            retry_at=None,
            error=error,
        )
    return PendingNotification(
        notification=notification,
        status="waiting",
        failures=failures,
        first_failed_at=before.first_failed_at if before else now,
        last_failed_at=now,
        retry_at=now + backoff.wait(failures),
        error=error,
    )


def _trim(
    entries: list[PendingNotification],
) -> tuple[list[PendingNotification], list[PendingNotification]]:
    aside = sorted((e for e in entries if e.status == "set-aside"), key=lambda e: e.last_failed_at)
    trimmed = aside[: max(0, len(aside) - SET_ASIDE_KEPT)]
    if not trimmed:
        return entries, []
    gone = {id(e) for e in trimmed}
    return [e for e in entries if id(e) not in gone], trimmed


def handled_uris(batch: Batch, activity: ActivityLog) -> frozenset[str]:
    """The batch's notifications the run replied to, liked or reposted (by notification URI:
    a tool may have been given the post's URI instead)."""
    touched = [p.in_reply_to for p in activity.posts if p.in_reply_to] + list(activity.acted_on)
    found = set()
    for uri in touched:
        item = batch.item(uri)
        if item is not None:
            found.add(item.notification.uri)
    return frozenset(found)


_QUEUE: Final = TypeAdapter(PendingQueue)


@dataclass(frozen=True, kw_only=True)
class PendingStore:
    """One account's queue in phi's memory: the one place the runtime reads and writes it."""

    memory: Memory
    account: str
    """phi's DID (the state key)."""

    async def load(self) -> PendingQueue:
        """The queue saved last (empty when none was)."""
        entry = await self.memory.state.read(STATE_SCOPE, self.account)
        if entry is None:
            return PendingQueue(account=self.account)
        try:
            return _QUEUE.validate_json(entry.value)
        except ValidationError as exc:
            # An unreadable queue must not stop phi. Its version stays in the state's history
            # (`keep` below) for the operator; phi starts over and says so.
            logger.warning(
                "pending notifications of %s unreadable (version %s kept), starting empty: %s",
                self.account,
                entry.version,
                exc.errors(include_url=False)[:1],
            )
            return PendingQueue(account=self.account)

    async def save(self, queue: PendingQueue) -> None:
        """Replace what is saved with `queue`."""
        assert queue.account == self.account, (queue.account, self.account)
        await self.memory.state.write(
            STATE_SCOPE, self.account, _QUEUE.dump_json(queue).decode(), at=utc_now(), keep=10
        )


async def read_pending(memory: Memory) -> list[PendingQueue]:
    """Every account's queue in `memory` (`phi runs pending`, `GET /api/pending`)."""
    return [
        await PendingStore(memory=memory, account=account).load()
        for account in await memory.state.keys(STATE_SCOPE)
    ]
