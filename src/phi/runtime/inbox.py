"""phi's inbox: which notifications a tick runs on, and what becomes of them after the run.

In: the unread notifications (every page back to the last one seen, within a bound), screened
by `Admission` (its rate-limit window kept in memory), and those a failed run left waiting
whose wait is over. Out: the unread ones marked seen, and what a failed run left unhandled
kept in the pending queue for a later tick, or set aside (`phi.runtime.pending`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from phi.atproto import Notification, PhiClient
from phi.memory import Memory
from phi.runtime.pending import Backoff, PendingQueue, PendingStore, Settled
from phi.runtime.ratelimit import Admission, Dropped, WindowState
from phi.runtime.unread import read_unread

__all__ = ["Inbox", "Intake"]

logger = logging.getLogger("phi.runtime")


@dataclass(frozen=True, kw_only=True)
class Intake:
    """The notifications one tick takes in."""

    unread: list[Notification]
    """Everything read as unread: marked seen once the tick is done with them."""
    dropped: list[Dropped]
    """Screened out (phi's own, the lists, the rate limit)."""
    due: list[Notification]
    """From the pending queue: their wait after a failed run is over."""
    fresh: list[Notification]
    """Unread and admitted, and not already in the queue."""

    @property
    def batched(self) -> list[Notification]:
        """What the tick runs on: the due ones, then the fresh ones."""
        return [*self.due, *self.fresh]


@dataclass(kw_only=True)
class Inbox:
    """Between the network and the poller's runs. `say` and `count` are the runtime's: its
    activity stream and its health counters."""

    client: PhiClient
    memory: Memory
    admission: Admission
    say: Callable[[str], None]
    count: Callable[[str], None]
    _window: WindowState = field(init=False)
    _window_loaded: bool = False
    _queue: PendingQueue | None = None
    """The pending queue as this process knows it: loaded on first use, and kept even when
    saving it failed, so the next tick still runs what it holds."""

    def __post_init__(self) -> None:
        self._window = WindowState(self.memory)

    async def queue(self) -> PendingQueue:
        """The pending queue (from memory, the first time)."""
        if self._queue is None:
            self._queue = await self._store().load()
        return self._queue

    def _store(self) -> PendingStore:
        return PendingStore(memory=self.memory, account=self.client.me.did)

    async def take(self, now: datetime, *, page_size: int, max_pages: int) -> Intake:
        """Read and screen the unread notifications, and add the queue's due ones."""
        queue = await self.queue()
        unread = await self._unread(page_size=page_size, max_pages=max_pages)
        admitted, dropped = await self._screen(unread, now) if unread else ([], [])
        # One the queue holds runs when its wait is over, not as new: saving the queue and
        # marking seen are two steps, and a crash between them leaves it unread as well.
        return Intake(
            unread=unread,
            dropped=dropped,
            due=queue.due(now),
            fresh=[n for n in admitted if not queue.holds(n.uri)],
        )

    async def peek(self, now: datetime, *, page_size: int, max_pages: int) -> list[Notification]:
        """What `take` would run on, without screening (which counts against the rate limit):
        the due ones, then the unread ones not phi's own."""
        queue = await self.queue()
        unread = await self._unread(page_size=page_size, max_pages=max_pages)
        me = self.client.me.did
        others = [n for n in unread if n.author_did != me and not queue.holds(n.uri)]
        return queue.due(now) + others

    async def close(
        self,
        intake: Intake,
        *,
        done: Collection[str],
        failure: str | None,
        now: datetime,
        backoff: Backoff,
    ) -> Settled:
        """After the run (or none): keep in the queue what a failed run left unhandled (or set
        it aside after its last allowed failure), save the queue if it changed, and mark the
        unread notifications seen.

        Args:
            intake: What the tick took in.
            done: URIs needing no other run: handled by the run, or dropped on purpose.
            failure: What ended the run; `None` when it finished (or there was none).
            now: The tick's time.
            backoff: The retry policy.
        """
        queue = await self.queue()
        settled = queue.settle(intake.batched, done=done, failure=failure, now=now, backoff=backoff)
        self._queue = settled.queue
        try:
            self._report(settled, now)
            if settled.queue != queue:
                await self._store().save(settled.queue)
        finally:
            # Seen in any case: the queue (this process's copy, even if saving it failed)
            # holds what is left, and a batch read again could be answered twice.
            if intake.unread:
                await self._mark_seen(intake.unread)
        return settled

    def _report(self, settled: Settled, now: datetime) -> None:
        if settled.waiting:
            soonest = min(e.retry_at or now for e in settled.waiting) - now
            self.say(
                f"{len(settled.waiting)} notification(s) the failed run left unanswered wait "
                f"for another (the first in {soonest.total_seconds():.0f}s)"
            )
        for entry in settled.set_aside:
            self.count("set_aside")
            n = entry.notification
            # A warning in the log, watched or not: the operator must be able to find it.
            logger.warning(
                "set aside the %s from @%s (%s) after %d failed runs, the last: %s "
                "(`phi runs pending`)",
                n.reason,
                n.author_handle,
                n.uri,
                entry.failures,
                entry.error,
            )
        for entry in settled.trimmed:
            logger.warning(
                "no longer keeping the set-aside %s (%s): %d newer ones are kept",
                entry.notification.uri,
                entry.error,
                len(settled.queue.set_aside),
            )

    async def _screen(
        self, unread: list[Notification], now: datetime
    ) -> tuple[list[Notification], list[Dropped]]:
        """The notifications phi will see, and the rest. The rate limit's window is loaded
        before the first screen and saved after each."""
        limit = self.admission.rate_limit
        if not self._window_loaded:
            limit.restore(await self._window.load())
            self._window_loaded = True
        admitted, dropped = self.admission.screen(unread, now)
        await self._window.save(limit.snapshot())
        for d in dropped:
            self.count("dropped")
            logger.info(
                "dropped %s from @%s: %s",
                d.notification.reason,
                d.notification.author_handle,
                d.reason,
            )
        return admitted, dropped

    async def _mark_seen(self, handled: list[Notification]) -> None:
        # Up to the newest notification handled, by the server's own clock, so one that
        # arrived meanwhile stays unread (1 ms past it: the AppView's `isRead` is
        # `seenAt > indexedAt`).
        newest = max(n.indexed_at for n in handled)
        await self.client.update_seen(newest + timedelta(milliseconds=1))

    async def _unread(self, *, page_size: int, max_pages: int) -> list[Notification]:
        """Unread notifications, oldest first, back to the last seen one (within the bound)."""
        read = await read_unread(self.client, page_size=page_size, max_pages=max_pages)
        if read.truncated:
            self.count("notification_pages_exhausted")
            logger.warning(
                "read %d pages of unread notifications (%d) and stopped: older unread ones "
                "will be marked seen without being handled (raise max_notification_pages)",
                read.pages,
                len(read.notifications),
            )
        return read.notifications
