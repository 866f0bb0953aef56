"""The notification poller and the scheduled jobs: phi's one loop (seed 001).

Each tick: fetch unread notifications (paging back to the last seen one), screen them (own,
allow/deny lists, per-author rate limit), add those a failed run left waiting whose wait is
over, build the batch's context, run the agent once for the whole batch, mark the
notifications seen, and store every reply as an interaction. A notification is marked seen
only once phi ran on it or deliberately dropped it: if building the batch fails, nothing is
marked and the next tick tries again. If the run fails (the model's provider, a timeout, any
other error), what it had replied to, liked or reposted stays done, and the rest waits in
phi's pending queue (`phi.runtime.pending`) for a later tick, or is set aside after its last
allowed failure. Then any scheduled job that is due runs: a musing, the daily reflection
(extraction first), a service check, a summary refresh, an extraction pass on its own
cadence. Paused, the poller neither reads nor
marks notifications, so they accumulate.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
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
    user_prompt_preview,
)
from phi.agent.deps import Batch, PhiPost
from phi.agent.public import card_publisher
from phi.atproto import Notification, PhiClient
from phi.errors import PhiError, UserError
from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.learning import Blocks, SmallModel, extract, refresh_summaries, review
from phi.memory.model import utc_now
from phi.redact import redact, redact_url
from phi.runtime.inbox import Inbox
from phi.runtime.journal import RunJournal
from phi.runtime.pending import Backoff, handled_uris
from phi.runtime.ratelimit import Admission
from phi.runtime.report import TickReport
from phi.runtime.schedules import Job, Schedule, ScheduleState
from phi.runtime.timing import TimedModel
from phi.services import CHECK_TIMEOUT, check_services, record_check

__all__ = ["PhiRuntime", "TickReport"]

logger = logging.getLogger("phi.runtime")

_DONE = {"keep": "kept", "supersede": "superseded", "promote": "promoted"}
"""A review verdict as what was done, for the one-line summary."""


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
    backoff: Backoff = field(default_factory=Backoff)
    """When notifications a failed run left unhandled run again, and how often they may fail."""
    blocks: Blocks = field(init=False)
    inbox: Inbox = field(init=False)
    """Which notifications a tick runs on, and what becomes of them after."""
    caches: PromptCaches = field(default_factory=PromptCaches)
    _paused: bool = False
    _service_up: dict[str, bool] = field(default_factory=dict)
    _counters: Counter[str] = field(default_factory=Counter)
    _last_tick: datetime | None = None
    _lock: anyio.Lock = field(default_factory=anyio.Lock)
    _fired: ScheduleState = field(init=False)

    def __post_init__(self) -> None:
        self.blocks = Blocks(memory=self.memory)
        self.inbox = Inbox(
            client=self.client,
            memory=self.memory,
            admission=self.admission,
            say=self._say,
            count=self._count,
        )
        self._fired = ScheduleState(self.memory)

    # -- the loop ------------------------------------------------------------------------

    async def seed(self) -> None:
        """Recover the schedule's used slots: those kept in memory (a musing that posted
        nothing used its slot too) and those phi's own posts show (no double posts on
        restart)."""
        self.schedule.restore(await self._fired.load())
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
            except Exception:
                # Not one of phi's errors (a bug, an exception nothing translated): the loop
                # outlives it, since the next tick may well succeed, and the log keeps the
                # traceback to fix it by.
                self._count("tick_errors")
                logger.exception("tick failed")
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
                    await self._fired.save(self.schedule.fired())
            finally:
                report.seconds = time.perf_counter() - started
                if self.model_timer is not None:
                    report.model_seconds = self.model_timer.seconds - model_before
            return report

    # -- notifications -------------------------------------------------------------------

    async def _notifications(self, now: datetime, report: TickReport) -> None:
        intake = await self.inbox.take(
            now, page_size=self.notification_page, max_pages=self.max_notification_pages
        )
        report.dropped = [(d.notification, d.reason) for d in intake.dropped]
        if not intake.batched:
            if intake.unread:
                await self.inbox.close(intake, done=(), failure=None, now=now, backoff=self.backoff)
            return
        if intake.fresh:
            self._say(f"{len(intake.fresh)} new notification(s): {_listed(intake.fresh)}")
        if intake.due:
            self._say(f"again after a failed run: {_listed(intake.due)}")
        # Built before anything is marked: if this fails, phi has done nothing yet and the
        # next tick tries the same notifications again (the rate limit counts them once).
        batch = await build_batch(
            self.client, self.memory, intake.batched, owner_handle=self.config.owner_handle
        )
        shown = {item.notification.uri for item in batch.items}
        gone = [n for n in intake.batched if n.uri not in shown]
        for n in gone:
            report.dropped.append((n, "post deleted"))
            self._count("dropped")
        report.admitted = [n for n in intake.batched if n.uri in shown]
        deps = self.deps("notifications", now, batch=batch, actions=report.actions)
        failure = None
        if batch.items:
            # Any failure, the model's or not, ends only this run: what it replied to, liked
            # or reposted stays done, and the rest waits in the pending queue.
            report.output, failure = await self._attempt(deps, failing=Exception)
            report.replies = deps.activity.posts
        settled = await self.inbox.close(
            intake,
            done=handled_uris(batch, deps.activity) | {n.uri for n in gone},
            failure=failure,
            now=now,
            backoff=self.backoff,
        )
        report.pending = [e.notification for e in settled.waiting]
        report.set_aside = [e.notification for e in settled.set_aside]
        await self._remember(deps, now)

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
        last_post_text: str | None = None,
        service_report: str | None = None,
    ) -> tuple[str, list[PhiPost]]:
        """A scheduled job's run; the model's failure is logged and the tick goes on."""
        deps = self.deps(entry, now, last_post_text=last_post_text, service_report=service_report)
        try:
            output, _ = await self._attempt(deps, failing=AgentRunError)
        finally:
            await self._remember(deps, now)
        return output, deps.activity.posts

    async def _attempt(
        self, deps: PhiDeps, *, failing: type[Exception] | tuple[type[Exception], ...]
    ) -> tuple[str, str | None]:
        """Run the agent on `deps`: its log line, and when one of `failing` ended it, what
        did (`Type: message`); what the run did before that still counts."""
        entry = deps.entry
        self._count(f"runs_{entry}")
        failure = None
        try:
            output = await self._agent_run(entry, deps)
        except failing as exc:
            self._count("runs_failed")
            if isinstance(exc, AgentRunError):  # the brain: an unusable answer, its provider
                logger.error("%s run failed: %s", entry, exc)
            else:  # anything else may be a bug: keep its traceback
                logger.exception("%s run failed", entry)
            shown = str(exc) or type(exc).__name__
            deps.activity.record(f"the {entry} run failed: {shown}")
            output, failure = f"failed: {shown}", f"{type(exc).__name__}: {shown}"
        logger.info("%s run: %s", entry, output)
        return output, failure

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
            await self._extract("reflection", now)
            await self._musing(now, entry="reflection")
        elif job == "service_check":
            await self._service_check(now)
        elif job == "summary_refresh" and self.small is not None:
            reports = await refresh_summaries(self.memory, self.small)
            logger.info("summary refresh: %d people", len(reports))
        elif job == "extraction":
            await self._extract("extraction", now)

    async def _extract(self, job: Job, now: datetime) -> None:
        """An extraction pass (none without a memory model); the reflection's counts as the
        extraction job's too, so the two keep one cadence."""
        if self.small is None:
            return
        report = await extract(self.memory, self.small)
        logger.info("%s: extraction %s", job, report.counts())
        self.schedule.mark("extraction", now)

    async def _last_post_text(self) -> str | None:
        posts = await self.client.list_own_posts(limit=1)
        return posts[0].text if posts else None

    async def _musing(self, now: datetime, *, entry: Entry = "musing") -> str:
        output, _ = await self._run(entry, now, last_post_text=await self._last_post_text())
        return output

    async def _service_check(self, now: datetime) -> None:
        """Check every watched service, keep what it found ([KNOWN SERVICES], [SERVICE
        HEALTH]) and run phi on what changed since the last scheduled check, with the
        decision whether to tag the owner (`phi.services.owner_alert`)."""
        config = self.schedule.config
        async with httpx.AsyncClient(timeout=CHECK_TIMEOUT) as http:
            statuses = await check_services(config.health_urls, http)
        report = await record_check(
            self.memory, statuses, at=now, owner_services=config.owner_services
        )
        self._service_up = {s.url: s.ok for s in statuses}
        if report.changes:
            prompt = report.prompt(self.config.owner_handle)
            await self._run("service_check", now, service_report=prompt)

    async def preview(self, entry: Entry = "notifications") -> str:
        """The exact system prompt the next run of `entry` would get (for a notification
        batch: the unread notifications now, screened but not marked seen)."""
        now = self.clock()
        batch = None
        if entry == "notifications":
            # Own ones dropped as `Admission` would; not screened by it, which would count
            # them against the rate limit.
            waiting = await self.inbox.peek(
                now, page_size=self.notification_page, max_pages=self.max_notification_pages
            )
            batch = await build_batch(
                self.client,
                self.memory,
                waiting,
                owner_handle=self.config.owner_handle,
                research=False,  # a preview writes nothing
            )
        last = await self._last_post_text() if entry in ("musing", "reflection") else None
        deps = self.deps(entry, now, batch=batch, last_post_text=last)
        # Printed for the operator: posts, tool output and URLs in it may hold secrets.
        system = await system_prompt(self.agent, deps)
        user = await user_prompt_preview(self.agent, deps)
        return redact(f"{system}\n\n[USER PROMPT — what the run sends as the user's turn]\n{user}")

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
            await self._fired.save(self.schedule.fired())
            return output

    async def review_now(self) -> str:
        if self.small is None:
            # The caller's to fix (a setting), so the control API answers 400, not 200.
            raise UserError("no memory model: review needs PHI_MEMORY_MODEL (or the local model)")
        async with self._lock:
            outcomes = await review(self.memory, self.small, publish=card_publisher(self.client))
        kinds = Counter(outcome.verdict for outcome in outcomes)
        done = ", ".join(f"{n} {_DONE.get(verdict, verdict)}" for verdict, n in kinds.items())
        published = [o.published for o in outcomes if o.published]
        shown = f"; published {', '.join(published)}" if published else ""
        noun = "observation" if len(outcomes) == 1 else "observations"
        return f"reviewed {len(outcomes)} {noun}: {done or 'nothing to review'}{shown}"

    async def health(self) -> dict[str, Any]:
        queue = await self.inbox.queue()
        return {
            "handle": self.client.me.handle,
            "last_tick": self._last_tick.isoformat() if self._last_tick else None,
            "counters": dict(self._counters),
            "services": {redact_url(url): up for url, up in self._service_up.items()},
            "pending": {"waiting": len(queue.waiting), "set_aside": len(queue.set_aside)},
        }

    # -- helpers -------------------------------------------------------------------------

    def _count(self, name: str) -> None:
        self._counters[name] += 1

    def _say(self, line: str) -> None:
        # Whoever watches (`phi run` logs what it is given, the sandbox prints it) hears the
        # line once; without a watcher it goes to the log.
        if self.emit is not None:
            self.emit(line)
        else:
            logger.info(line)


def _listed(notifications: list[Notification]) -> str:
    return ", ".join(f"{n.reason} from @{n.author_handle}" for n in notifications)
