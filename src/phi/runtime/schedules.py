"""The schedule clock of `phi run`.

The poller ticks every few seconds and asks `Schedule.due(now)` which scheduled jobs to run;
after running one it calls `Schedule.mark(job, at)`. The clock is passed in, so tests need
no sleeping. A slot counts as used once its job ran, whether or not it posted (a musing the
guard refused posts nothing): what ran is kept in phi's memory (`ScheduleState`) and read
back at startup, together with `Schedule.seed_from_posts` over phi's own recent posts (which
also sees posts made by another process), so a restart never runs a slot twice.

All hours are UTC.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final, Literal, assert_never, get_args

from phi.atproto import Post
from phi.config import Settings
from phi.errors import InvalidInput
from phi.memory import Memory
from phi.memory.model import utc_now

__all__ = [
    "DEFAULT_MUSING_HOURS",
    "JOBS",
    "Fired",
    "Job",
    "Schedule",
    "ScheduleConfig",
    "ScheduleState",
]

Job = Literal["musing", "reflection", "service_check", "summary_refresh", "extraction"]
"""A scheduled job: a musing post, the daily reflection, a service check, a summary refresh,
an extraction pass over new exchanges."""

JOBS: Final[tuple[Job, ...]] = get_args(Job)
"""Every job, in the order `Schedule.due` lists them."""

logger = logging.getLogger("phi.runtime")

DEFAULT_MUSING_HOURS: Final = frozenset({9, 13, 17, 21})
"""Four musings a day, four hours apart, from morning to evening in UTC (Europe's day and
America's morning to afternoon), before the default reflection at 22."""


@dataclass(frozen=True, kw_only=True)
class ScheduleConfig:
    """When the scheduled jobs run."""

    musing_hours: frozenset[int] = DEFAULT_MUSING_HOURS
    """UTC hours in which phi may post one musing each; empty means no musings."""
    reflection_hour: int | None = 22
    """UTC hour from which the daily reflection is due until it happens; `None`: never."""
    service_check_every: timedelta = timedelta(hours=3)
    """Time between two service checks."""
    summary_refresh_every: timedelta = timedelta(hours=24)
    """Time between two refreshes of phi's self-summary."""
    health_urls: tuple[str, ...] = ()
    """URLs the service check requests; empty means the check never runs."""
    owner_services: tuple[str, ...] = ()
    """Host patterns (`*.example.org`) of the owner's own services among `health_urls`: one
    of them going down tags the owner (`phi.services.owner_alert`)."""
    extraction_every: timedelta | None = None
    """Time between two extraction passes, whatever the reflection does; `None`: only the
    reflection's (the settings' default is daily, `PHI_EXTRACTION_HOURS`)."""

    def __post_init__(self) -> None:
        wrong = sorted(h for h in self.musing_hours if not 0 <= h <= 23)
        if wrong:
            raise InvalidInput(f"musing hours are UTC hours 0-23, got {wrong!r}")
        if self.reflection_hour is not None and not 0 <= self.reflection_hour <= 23:
            raise InvalidInput(
                f"the reflection hour is a UTC hour 0-23, got {self.reflection_hour!r}"
            )
        for name in ("service_check_every", "summary_refresh_every", "extraction_every"):
            every: timedelta | None = getattr(self, name)
            if every is not None and every <= timedelta(0):
                raise InvalidInput(f"{name} must be positive, got {every!r}")

    @classmethod
    def from_settings(cls, settings: Settings) -> ScheduleConfig:
        """The schedule of `musing_hours`, `reflection_hour`, `health_urls`,
        `service_check_hours`, `owner_services` and `extraction_hours` (the summary refresh
        keeps its daily default)."""
        hours = settings.extraction_hours
        return cls(
            musing_hours=frozenset(settings.musing_hours),
            reflection_hour=settings.reflection_hour,
            service_check_every=timedelta(hours=settings.service_check_hours),
            health_urls=tuple(settings.health_urls),
            owner_services=tuple(settings.owner_services),
            extraction_every=timedelta(hours=hours) if hours is not None else None,
        )


def _utc(at: datetime) -> datetime:
    if at.tzinfo is None:
        raise ValueError(f"the schedule needs timezone-aware datetimes, got {at!r}")
    return at.astimezone(UTC)


@dataclass(frozen=True, kw_only=True)
class Fired:
    """The slots a schedule has used, as kept between starts (`ScheduleState`)."""

    musings: frozenset[tuple[date, int]] = frozenset()
    """(UTC day, hour) of each musing slot that ran, today's and later only."""
    reflected_on: date | None = None
    """The last day whose reflection ran."""
    summary_refreshed_at: datetime | None = None
    """When the summary refresh last ran."""
    extracted_at: datetime | None = None
    """When an extraction pass (its own job, or the reflection's) last ran."""


class Schedule:
    """Which jobs are due, and which already ran.

    - `musing`: in each hour of `musing_hours`, once.
    - `reflection`: once a day, from `reflection_hour` to midnight.
    - `service_check`: every `service_check_every`, only with `health_urls`; the first one
      is due one interval after `started_at` (nothing persists across restarts, and a
      restart loop should not hammer the services).
    - `summary_refresh`: at once, then every `summary_refresh_every`.
    - `extraction`: with `extraction_every`, at once, then every `extraction_every`; the
      reflection extracts first too and marks it (`mark("extraction", ...)`), so with
      both on, the passes keep one cadence.

    A job stays due until it is marked, so a job whose run failed is retried on the next
    tick: mark it anyway if it should not be. A job that ran without posting (a refused
    musing) is marked like any other: its slot is used.
    """

    def __init__(self, config: ScheduleConfig, *, started_at: datetime) -> None:
        self.config = config
        self._musings: set[tuple[date, int]] = set()
        self._reflected_on: date | None = None
        self._last_service_check = _utc(started_at)
        self._last_summary_refresh: datetime | None = None
        self._last_extraction: datetime | None = None
        self._held = False

    def due(self, now: datetime) -> list[Job]:
        """The jobs due at `now`, in the order of `JOBS`; none while held."""
        if self._held:
            return []
        now = _utc(now)
        return [job for job in JOBS if self._is_due(job, now)]

    @property
    def held(self) -> bool:
        """Whether every job waits (`hold`)."""
        return self._held

    def hold(self) -> None:
        """Let no job be due until `release`: the sandbox answers alice before a musing
        or a summary refresh takes the (single, slow) local model for minutes."""
        self._held = True

    def release(self) -> None:
        """Let jobs be due again; what came due meanwhile runs on the next tick."""
        self._held = False

    def fired(self) -> Fired:
        """What ran so far, for `ScheduleState.save` (the service check is not kept: its
        first run is one interval after each start)."""
        return Fired(
            musings=frozenset(self._musings),
            reflected_on=self._reflected_on,
            summary_refreshed_at=self._last_summary_refresh,
            extracted_at=self._last_extraction,
        )

    def restore(self, fired: Fired) -> None:
        """Mark what `fired` says ran (kept from an earlier start)."""
        for day, hour in sorted(fired.musings):
            self.mark("musing", datetime(day.year, day.month, day.day, hour, tzinfo=UTC))
        if fired.reflected_on is not None:
            day = fired.reflected_on
            self.mark("reflection", datetime(day.year, day.month, day.day, tzinfo=UTC))
        if fired.summary_refreshed_at is not None:
            last = self._last_summary_refresh
            at = _utc(fired.summary_refreshed_at)
            self.mark("summary_refresh", at if last is None else max(last, at))
        if fired.extracted_at is not None:
            self.mark("extraction", fired.extracted_at)

    def mark(self, job: Job, at: datetime) -> None:
        """Record that `job` ran at `at`.

        Pass the `now` the job was found due at, not the time its run finished: a musing
        found due at 13:59 and finished at 14:00 belongs to the 13:00 slot.
        """
        at = _utc(at)
        if job == "musing":
            self._musings = {slot for slot in self._musings if slot[0] >= at.date()}
            self._musings.add((at.date(), at.hour))
        elif job == "reflection":
            if self._reflected_on is None or at.date() > self._reflected_on:
                self._reflected_on = at.date()
        elif job == "service_check":
            self._last_service_check = at
        elif job == "summary_refresh":
            self._last_summary_refresh = at
        elif job == "extraction":
            if self._last_extraction is None or at > self._last_extraction:
                self._last_extraction = at
        else:
            assert_never(job)

    def seed_from_posts(
        self, posts: Iterable[Post], now: datetime, *, author_did: str | None = None
    ) -> None:
        """Recover today's musings and reflection from phi's own recent posts.

        Only top-level posts count (replies are conversation, not scheduled posts). A post
        made in a musing hour marks that hour's musing; a post made at or after the
        reflection hour marks that day's reflection. Posts from before today (UTC) change
        nothing that can still be due, and are skipped.

        Args:
            posts: phi's recent posts, e.g. `PhiClient.get_author_feed(phi's DID)`.
            now: The current time.
            author_did: phi's DID; when given, posts by anyone else (reposts in an author
                feed) are ignored.
        """
        today = _utc(now).date()
        for post in posts:
            if post.reply_root is not None:
                continue
            if author_did is not None and post.author_did != author_did:
                continue
            created = _utc(post.created_at)
            if created.date() < today:
                continue
            if created.hour in self.config.musing_hours:
                self.mark("musing", created)
            hour = self.config.reflection_hour
            if hour is not None and created.hour >= hour:
                self.mark("reflection", created)

    def _is_due(self, job: Job, now: datetime) -> bool:
        config = self.config
        if job == "musing":
            return now.hour in config.musing_hours and (now.date(), now.hour) not in self._musings
        if job == "reflection":
            return (
                config.reflection_hour is not None
                and now.hour >= config.reflection_hour
                and (self._reflected_on is None or self._reflected_on < now.date())
            )
        if job == "service_check":
            return (
                bool(config.health_urls)
                and now - self._last_service_check >= config.service_check_every
            )
        if job == "summary_refresh":
            last = self._last_summary_refresh
            return last is None or now - last >= config.summary_refresh_every
        if job == "extraction":
            every = config.extraction_every
            extracted = self._last_extraction
            return every is not None and (extracted is None or now - extracted >= every)
        assert_never(job)


class ScheduleState:
    """The schedule's used slots, kept in phi's memory between starts.

    The one place the runtime reads and writes the memory store for the schedule (as
    `WindowState` is for the rate limit).
    """

    SCOPE: Final = "schedule"
    """The memory state scope."""

    def __init__(self, memory: Memory, *, key: str = "fired") -> None:
        self.memory = memory
        self.key = key

    async def load(self) -> Fired:
        """What was saved last (nothing ran, when nothing was saved yet)."""
        entry = await self.memory.state.read(self.SCOPE, self.key)
        if entry is None:
            return Fired()
        try:
            saved = json.loads(entry.value)
            refreshed = saved["summary_refreshed_at"]
            reflected = saved["reflected_on"]
            extracted = saved.get("extracted_at")  # absent in what an older phi saved
            return Fired(
                musings=frozenset(
                    (date.fromisoformat(day), int(hour)) for day, hour in saved["musings"]
                ),
                reflected_on=date.fromisoformat(reflected) if reflected else None,
                summary_refreshed_at=datetime.fromisoformat(refreshed) if refreshed else None,
                extracted_at=datetime.fromisoformat(extracted) if extracted else None,
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # Unreadable state must not stop phi: at worst a slot runs once more, and it says so.
            logger.warning("schedule state %r unreadable, starting empty: %s", self.key, exc)
            return Fired()

    async def save(self, fired: Fired) -> None:
        """Replace what is saved with `fired` (`Schedule.fired()`)."""
        value = {
            "musings": sorted([day.isoformat(), hour] for day, hour in fired.musings),
            "reflected_on": fired.reflected_on.isoformat() if fired.reflected_on else None,
            "summary_refreshed_at": (
                fired.summary_refreshed_at.isoformat() if fired.summary_refreshed_at else None
            ),
            "extracted_at": fired.extracted_at.isoformat() if fired.extracted_at else None,
        }
        # Only the newest matters; one older version to fall back on.
        await self.memory.state.write(
            self.SCOPE, self.key, json.dumps(value, sort_keys=True), at=utc_now(), keep=2
        )
