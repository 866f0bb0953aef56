"""Helpers of the scheduled-run tests: phi in process on a real memory with a scripted
brain and a clock the test moves, and exchanges remembered as `phi run` stores them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

from tests.agent._brain import Brain, Decide
from tests.runtime._feed import START, FeedClient, as_client
from tests.runtime._runtime import Clock, stay_silent

from phi.agent import AgentConfig, build_agent
from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.learning import SmallModel
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Schedule, ScheduleConfig

OWNER = "phi-operator.test"


@asynccontextmanager
async def running(
    memory: Memory,
    schedule: ScheduleConfig,
    config: AgentConfig,
    decide: Decide = stay_silent,
    small: SmallModel | None = None,
) -> AsyncIterator[tuple[PhiRuntime, Brain, Clock]]:
    brain, clock = Brain(decide), Clock()
    runtime = PhiRuntime(
        client=as_client(FeedClient(feed=[])),
        memory=memory,
        agent=build_agent(brain.model(), config),
        config=config,
        admission=Admission(self_did="did:plc:phi"),
        schedule=Schedule(schedule, started_at=clock()),
        clock=clock,
        small=small,
    )
    runtime.schedule.mark("summary_refresh", clock())
    yield runtime, brain, clock


async def said(memory: Memory, who: str, text: str, reply: str, *, hours_ago: float) -> None:
    did = f"did:plc:{who}"
    await memory.remember(
        NewRow.interaction(
            [
                Turn(speaker=f"@{who}.test", text=text),
                Turn(speaker="@phi.test", text=reply, by_phi=True),
            ],
            namespace=user_namespace(did),
            author=did,
            created_at=START - timedelta(hours=hours_ago),
        )
    )


def block(prompt: str, label: str) -> str:
    """One block of a system prompt, from its label to the next blank line."""
    start = prompt.index(f"[{label}")
    end = prompt.find("\n\n", start)
    return prompt[start : end if end >= 0 else None]


def urls(codes: dict[str, int]) -> tuple[str, ...]:
    return tuple(f"http://127.0.0.1:{codes['port']}{p}" for p in ("/pds", "/relay", "/feed"))
