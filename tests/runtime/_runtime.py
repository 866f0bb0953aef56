"""phi running in process for the poller's unit tests: the runtime as `phi run` assembles it,
around a feed double (`_feed.FeedClient`), a real memory file, the real agent with a
scripted brain (`tests.agent._brain.Brain`) and a clock the test moves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic_ai import ToolCallPart
from tests.agent._brain import Brain, Decide, call, mentions
from tests.agent._network import PHI
from tests.runtime._feed import START, FeedClient, as_client

from phi.agent import AgentConfig, build_agent
from phi.atproto import Notification, Post
from phi.memory import Memory
from phi.runtime.pending import Backoff
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Schedule, ScheduleConfig
from phi.runtime.timing import TimedModel

NO_JOBS = ScheduleConfig(
    musing_hours=frozenset(), reflection_hour=None, summary_refresh_every=timedelta(days=365)
)
"""Nothing scheduled but the summary refresh, which is due at once and skipped without a
memory model."""

MUSING = ScheduleConfig(
    musing_hours=frozenset({START.hour}),
    reflection_hour=None,
    summary_refresh_every=timedelta(days=365),
)


def own_post(text: str, *, at: datetime) -> Post:
    return Post(
        uri=f"at://{PHI.did}/app.bsky.feed.post/{abs(hash(text))}",
        cid="c",
        author_did=PHI.did,
        author_handle=PHI.handle,
        text=text,
        created_at=at,
    )


async def muse(prompt: str, step: int) -> list[ToolCallPart]:
    return [call("post", text="the herons are back")] if step == 0 else []


@dataclass
class Clock:
    """The runtime's clock, moved by the test (the waits between retries are minutes)."""

    now: datetime = START + timedelta(minutes=5)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Phi:
    """A runtime with what a test watches: its feed, its brain, its stream, its clock."""

    runtime: PhiRuntime
    client: FeedClient
    brain: Brain
    clock: Clock
    said: list[str] = field(default_factory=list)


async def reply_to_everyone(prompt: str, step: int) -> list[ToolCallPart]:
    if step > 0:
        return []
    return [call("reply_to", uri=uri, text=f"hi @{handle}") for handle, uri in mentions(prompt)]


async def stay_silent(prompt: str, step: int) -> list[ToolCallPart]:
    return []


@asynccontextmanager
async def open_phi(
    memory: Memory,
    decide: Decide = reply_to_everyone,
    *,
    feed: list[Notification] | None = None,
    schedule: ScheduleConfig = NO_JOBS,
    backoff: Backoff | None = None,
    emit: bool = True,
    timed: bool = True,
    **extra: Any,
) -> AsyncIterator[Phi]:
    """phi on `memory` with `feed` unread and `decide` as its brain; `extra` sets any other
    field of the runtime (`small`, `journal`, `poll_seconds`...)."""
    client = FeedClient(feed=list(feed or []))
    brain = Brain(decide)
    clock = Clock()
    config = AgentConfig(owner_handle="phi-operator.test")
    timed_model = TimedModel(brain.model())
    said: list[str] = []
    runtime = PhiRuntime(
        client=as_client(client),
        memory=memory,
        agent=build_agent(timed_model, config),
        config=config,
        admission=Admission(self_did=PHI.did),
        schedule=Schedule(schedule, started_at=clock()),
        clock=clock,
        model_timer=timed_model if timed else None,
        emit=said.append if emit else None,
        backoff=backoff or Backoff(base_seconds=30, max_seconds=100, attempts=2),
        **extra,
    )
    yield Phi(runtime=runtime, client=client, brain=brain, clock=clock, said=said)
