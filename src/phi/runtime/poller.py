"""The notification poller and the scheduled jobs: phi's one loop (seed 001).

Each tick: fetch unread notifications (paging back to the last seen one), screen them (own,
allow/deny lists, per-author rate limit), build the batch's context, run the agent once for
the whole batch, mark the notifications seen, and store every reply as an interaction. A
notification is marked seen only once phi ran on it or deliberately dropped it: if building
the batch fails, nothing is marked and the next tick tries again. Then any scheduled job that is
due runs: a musing, the daily reflection (extraction first), a service check, a summary
refresh. Paused, the poller neither reads nor marks notifications, so they accumulate.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx
from pydantic_ai.exceptions import AgentRunError

from phi.agent import (
    ActivityLog,
    AgentConfig,
    Entry,
    PhiAgent,
    PhiDeps,
    PromptCaches,
    build_batch,
    run,
    system_prompt,
)
from phi.agent.deps import Batch, PhiPost
from phi.agent.public import card_publisher
from phi.atproto import Notification, PhiClient
from phi.errors import PhiError
from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.learning import Blocks, SmallModel, extract, refresh_summaries, review
from phi.memory.model import utc_now
from phi.runtime.journal import RunJournal
from phi.runtime.ratelimit import Admission, WindowState
from phi.runtime.schedules import Job, Schedule, check_services, transitions
from phi.runtime.timing import TimedModel
from phi.runtime.unread import read_unread

__all__ = ["PhiRuntime", "TickReport"]

logger = logging.getLogger("phi.runtime")


@dataclass
class TickReport:
    """What one tick did (for logs, tests and the sandbox's stream)."""

    admitted: list[Notification] = field(default_factory=list)
    dropped: list[tuple[Notification, str]] = field(default_factory=list)
    """Kept from phi, with why (screened out, or its post deleted before the tick)."""
    replies: list[PhiPost] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    """One line per thing phi did in the tick's runs (tool calls that acted or failed)."""
    jobs: list[Job] = field(default_factory=list)
    output: str | None = None
    seconds: float = 0.0
    """Wall time of the tick."""
    model_seconds: float = 0.0
    """Of which waiting on the agent's model (when it is a `TimedModel`)."""


@dataclass(kw_only=True)
class PhiRuntime:
    """phi, running: the poller, the schedules and what the control API drives."""

    client: PhiClient
    memory: Memory
    agent: PhiAgent
    config: AgentConfig
    admission: Admission
    schedule: Schedule
    small: SmallModel | None = None
    """The memory passes' model; without one, extraction, reviews and summaries are skipped."""
    poll_seconds: float = 10.0
    notification_page: int = 50
    """Notifications per `listNotifications` request."""
    max_notification_pages: int = 20
    """How far back one tick pages through unread notifications; past that (a long outage),
    older unread ones are marked seen unhandled, with a warning in the log."""
    emit: Callable[[str], None] | None = None
    """Receives one line per thing phi does (the sandbox prints them)."""
    clock: Callable[[], datetime] = utc_now
    model_timer: TimedModel | None = None
    """The agent's model, when wrapped to time it: ticks then report phi's own latency."""
    journal: RunJournal | None = None
    """Where every run is recorded (`phi runs`); `None` keeps no journal."""
    blocks: Blocks = field(init=False)
    caches: PromptCaches = field(default_factory=PromptCaches)
    _paused: bool = False
    _service_up: dict[str, bool] = field(default_factory=dict)
    _counters: Counter[str] = field(default_factory=Counter)
    _last_tick: datetime | None = None
    _lock: anyio.Lock = field(default_factory=anyio.Lock)
    _window: WindowState = field(init=False)
    _window_loaded: bool = False

    def __post_init__(self) -> None:
        self.blocks = Blocks(memory=self.memory)
        self._window = WindowState(self.memory)

    # -- the loop ------------------------------------------------------------------------

    async def seed(self) -> None:
        """Recover the schedule's fired state from phi's own posts (no double posts on
        restart)."""
        posts = await self.client.list_own_posts(limit=50)
        self.schedule.seed_from_posts(posts, self.clock(), author_did=self.client.me.did)

    async def serve(self, stop: anyio.Event) -> None:
        """Tick every `poll_seconds` until `stop` is set; a failing tick is logged, not fatal."""
        await self.seed()
        while not stop.is_set():
            try:
                await self.tick()
            except PhiError as exc:
                self._count("tick_errors")
                logger.error("tick failed: %s", exc)
            with anyio.move_on_after(self.poll_seconds):
                await stop.wait()

    async def tick(self) -> TickReport:
        """One pass: the notification batch, then the due scheduled jobs."""
        async with self._lock:
            now = self.clock()
            self._last_tick = now
            report = TickReport()
            if self._paused:
                return report
            started = time.perf_counter()
            model_before = self.model_timer.seconds if self.model_timer else 0.0
            try:
                await self._notifications(now, report)
                for job in self.schedule.due(now):
                    report.jobs.append(job)
                    await self._job(job, now)
                    self.schedule.mark(job, now)
            finally:
                report.seconds = time.perf_counter() - started
                if self.model_timer is not None:
                    report.model_seconds = self.model_timer.seconds - model_before
            return report

    # -- notifications -------------------------------------------------------------------

    async def _notifications(self, now: datetime, report: TickReport) -> None:
        unread = await self._unread()
        if not unread:
            return
        admitted = await self._screen(unread, now, report)
        if not admitted:
            await self._mark_seen(unread)
            return
        self._say(
            f"{len(admitted)} new notification(s): "
            + ", ".join(f"{n.reason} from @{n.author_handle}" for n in admitted)
        )
        # Built before anything is marked: if this fails, phi has done nothing yet and the
        # next tick tries the same notifications again (the rate limit counts them once).
        batch = await build_batch(
            self.client, self.memory, admitted, owner_handle=self.config.owner_handle
        )
        shown = {item.notification.uri for item in batch.items}
        for gone in (n for n in admitted if n.uri not in shown):
            report.dropped.append((gone, "post deleted"))
            self._count("dropped")
        report.admitted = [n for n in admitted if n.uri in shown]
        try:
            if batch.items:
                report.output, report.replies = await self._run(
                    "notifications", now, batch=batch, actions=report.actions
                )
        finally:
            # Seen even when the run failed: retrying a half-handled batch could reply twice.
            await self._mark_seen(unread)

    async def _screen(
        self, unread: list[Notification], now: datetime, report: TickReport
    ) -> list[Notification]:
        """The notifications phi will see; the rest go to `report.dropped`. The rate limit's
        window is loaded before the first screen and saved after each."""
        limit = self.admission.rate_limit
        if not self._window_loaded:
            limit.restore(await self._window.load())
            self._window_loaded = True
        admitted, dropped = self.admission.screen(unread, now)
        await self._window.save(limit.snapshot())
        report.dropped = [(d.notification, d.reason) for d in dropped]
        for d in dropped:
            self._count("dropped")
            logger.info(
                "dropped %s from @%s: %s",
                d.notification.reason,
                d.notification.author_handle,
                d.reason,
            )
        return admitted

    async def _mark_seen(self, handled: list[Notification]) -> None:
        # Up to the newest notification handled, by the server's own clock, so one that
        # arrived meanwhile stays unread (1 ms past it: the AppView's `isRead` is
        # `seenAt > indexedAt`).
        newest = max(n.indexed_at for n in handled)
        await self.client.update_seen(newest + timedelta(milliseconds=1))

    async def _unread(self) -> list[Notification]:
        """Unread notifications, oldest first, back to the last seen one (within the bound)."""
        read = await read_unread(
            self.client, page_size=self.notification_page, max_pages=self.max_notification_pages
        )
        if read.truncated:
            self._count("notification_pages_exhausted")
            logger.warning(
                "read %d pages of unread notifications (%d) and stopped: older unread ones "
                "will be marked seen without being handled (raise max_notification_pages)",
                read.pages,
                len(read.notifications),
            )
        return read.notifications

    # -- runs ----------------------------------------------------------------------------

    def deps(
        self,
        entry: Entry,
        now: datetime,
        *,
        batch: Batch | None = None,
        last_post_text: str | None = None,
        service_report: str | None = None,
        actions: list[str] | None = None,
    ) -> PhiDeps:
        """The deps of one run (also what `phi prompt --preview` renders), complete when
        built: nothing sets a field afterwards. `actions` is the list the run's activity
        log appends to (a tick's report keeps what a failed run did before it failed)."""
        return PhiDeps(
            client=self.client,
            memory=self.memory,
            blocks=self.blocks,
            small=self.small,
            config=self.config,
            caches=self.caches,
            entry=entry,
            batch=batch,
            now=now,
            last_post_text=last_post_text,
            service_report=service_report,
            activity=ActivityLog(emit=self.emit, actions=[] if actions is None else actions),
        )

    async def _run(
        self,
        entry: Entry,
        now: datetime,
        *,
        batch: Batch | None = None,
        actions: list[str] | None = None,
        last_post_text: str | None = None,
        service_report: str | None = None,
    ) -> tuple[str, list[PhiPost]]:
        deps = self.deps(
            entry,
            now,
            batch=batch,
            last_post_text=last_post_text,
            service_report=service_report,
            actions=actions,
        )
        self._count(f"runs_{entry}")
        try:
            output = await self._agent_run(entry, deps)
        except AgentRunError as exc:
            # The brain failed (an unusable answer, a provider error): what phi did before
            # that still counts, and the next tick goes on.
            self._count("runs_failed")
            logger.error("%s run failed: %s", entry, exc)
            deps.activity.record(f"the {entry} run failed: {exc}")
            output = f"failed: {exc}"
        finally:
            await self._remember(deps, now)
        logger.info("%s run: %s", entry, output)
        return output, deps.activity.posts

    async def _agent_run(self, entry: Entry, deps: PhiDeps) -> str:
        if self.journal is None:
            return await run(self.agent, deps)
        before = len(deps.activity.actions)  # the tick's list may hold earlier runs' lines
        return await self.journal.run(
            entry, lambda: run(self.agent, deps), actions=lambda: deps.activity.actions[before:]
        )

    async def _remember(self, deps: PhiDeps, now: datetime) -> None:
        """Store each reply with what it answered, verbatim, in that person's memory."""
        me = self.client.me
        for reply in deps.activity.posts:
            if reply.to_did is None or reply.to_did == me.did or not reply.to_text:
                continue
            await self.memory.remember(
                NewRow.interaction(
                    [
                        Turn(speaker=f"@{reply.to_handle}", text=reply.to_text),
                        Turn(speaker=f"@{me.handle}", text=reply.text, by_phi=True),
                    ],
                    namespace=user_namespace(reply.to_did),
                    author=reply.to_did,
                    source_uris=[u for u in (reply.in_reply_to, reply.uri) if u],
                    thread=reply.thread_root,
                    created_at=now,
                )
            )
            self._count("interactions_stored")

    # -- scheduled jobs ------------------------------------------------------------------

    async def _job(self, job: Job, now: datetime) -> None:
        self._say(f"scheduled: {job}")
        if job == "musing":
            await self._musing(now)
        elif job == "reflection":
            if self.small is not None:
                report = await extract(self.memory, self.small)
                logger.info("reflection: extraction %s", report.counts())
            await self._musing(now, entry="reflection")
        elif job == "service_check":
            await self._service_check(now)
        elif job == "summary_refresh" and self.small is not None:
            reports = await refresh_summaries(self.memory, self.small)
            logger.info("summary refresh: %d people", len(reports))

    async def _last_post_text(self) -> str | None:
        posts = await self.client.list_own_posts(limit=1)
        return posts[0].text if posts else None

    async def _musing(self, now: datetime, *, entry: Entry = "musing") -> str:
        output, _ = await self._run(entry, now, last_post_text=await self._last_post_text())
        return output

    async def _service_check(self, now: datetime) -> None:
        async with httpx.AsyncClient(timeout=10) as http:
            statuses = await check_services(self.schedule.config.health_urls, http)
        changes = transitions(self._service_up, statuses)
        self._service_up = {s.url: s.ok for s in statuses}
        if changes:
            await self._run("service_check", now, service_report="\n".join(changes))

    async def preview(self, entry: Entry = "notifications") -> str:
        """The exact system prompt the next run of `entry` would get (for a notification
        batch: the unread notifications now, screened but not marked seen)."""
        now = self.clock()
        batch = None
        if entry == "notifications":
            # Own ones dropped as `Admission` would; not screened by it, which would count
            # them against the rate limit.
            others = [n for n in await self._unread() if n.author_did != self.client.me.did]
            batch = await build_batch(
                self.client,
                self.memory,
                others,
                owner_handle=self.config.owner_handle,
                research=False,  # a preview writes nothing
            )
        last = await self._last_post_text() if entry in ("musing", "reflection") else None
        deps = self.deps(entry, now, batch=batch, last_post_text=last)
        return await system_prompt(self.agent, deps)

    # -- control API ---------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        return self._paused

    async def pause(self) -> None:
        self._paused = True
        self._say("paused: notifications accumulate until resume")

    async def resume(self) -> None:
        self._paused = False
        self._say("resumed")

    async def post_now(self) -> str:
        async with self._lock:
            now = self.clock()
            output = await self._musing(now)
            self.schedule.mark("musing", now)
            return output

    async def review_now(self) -> str:
        if self.small is None:
            return "no memory model: review needs PHI_MEMORY_MODEL (or the local model)"
        async with self._lock:
            outcomes = await review(self.memory, self.small, publish=card_publisher(self.client))
        kinds = dict(Counter(outcome.verdict for outcome in outcomes))
        published = [o.published for o in outcomes if o.published]
        shown = f"; published {', '.join(published)}" if published else ""
        return f"reviewed {len(outcomes)} observations: {kinds or 'nothing to review'}{shown}"

    async def health(self) -> dict[str, Any]:
        return {
            "handle": self.client.me.handle,
            "last_tick": self._last_tick.isoformat() if self._last_tick else None,
            "counters": dict(self._counters),
            "services": dict(self._service_up),
        }

    # -- helpers -------------------------------------------------------------------------

    def _count(self, name: str) -> None:
        self._counters[name] += 1

    def _say(self, line: str) -> None:
        logger.info(line)
        if self.emit is not None:
            self.emit(line)
