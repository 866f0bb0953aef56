"""The poller's own logic (`phi.runtime.poller`) in process: phi's notifications served by a
feed double (`_feed.FeedClient`), a real memory file, the real agent with a scripted brain.
The same paths run against the local network in `test_poller_failures.py` and
`tests/agent/test_poller_reliability.py`; these are fast enough to run per mutant."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import anyio
import pytest
from pydantic_ai import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from tests.agent._brain import Brain, Decide, call, mentions
from tests.agent._network import PHI
from tests.runtime._feed import START, FeedClient, as_client, mention

from phi.agent import AgentConfig, build_agent
from phi.agent.gate import REQUEST_SCOPE
from phi.atproto import NotFound, Post, Profile
from phi.errors import UserError
from phi.memory import Memory, NewRow, Turn, user_namespace
from phi.memory.learning import SmallModel
from phi.runtime.journal import RunJournal
from phi.runtime.pending import Backoff
from phi.runtime.poller import PhiRuntime
from phi.runtime.ratelimit import Admission
from phi.runtime.schedules import Fired, Schedule, ScheduleConfig, ScheduleState
from phi.runtime.timing import TimedModel

pytestmark = pytest.mark.anyio

NO_JOBS = ScheduleConfig(
    musing_hours=frozenset(), reflection_hour=None, summary_refresh_every=timedelta(days=365)
)
"""Nothing scheduled but the summary refresh, which is due at once and skipped without a
memory model."""


@dataclass
class Clock:
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


@pytest.fixture
def open_phi(memory: Memory) -> Callable[..., Any]:
    @asynccontextmanager
    async def opened(
        decide: Decide = reply_to_everyone,
        *,
        feed: list[Any] | None = None,
        schedule: ScheduleConfig = NO_JOBS,
        backoff: Backoff | None = None,
        emit: bool = True,
        timed: bool = True,
        **extra: Any,
    ) -> AsyncIterator[Phi]:
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

    return opened


Open = Callable[..., Any]


async def test_a_tick_answers_the_batch_marks_it_seen_and_remembers_each_reply(
    open_phi: Open, memory: Memory
) -> None:
    alice, bob = mention(1), mention(2, handle="bob.test")
    own = mention(3, handle="phi.test", did=PHI.did)
    async with open_phi(feed=[alice, bob, own]) as phi:
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert report.admitted == [alice, bob]
    assert report.dropped == [(own, "own")]
    assert [(r.in_reply_to, r.text) for r in report.replies] == [
        (alice.uri, "hi @alice.test"),
        (bob.uri, "hi @bob.test"),
    ]
    assert phi.client.replies == [("hi @alice.test", alice.uri), ("hi @bob.test", bob.uri)]
    assert report.output == "done"
    assert report.actions == [
        "replied to @alice.test: hi @alice.test",
        "replied to @bob.test: hi @bob.test",
    ]
    assert phi.said == [
        "2 new notification(s): mention from @alice.test, mention from @bob.test",
        *report.actions,
        "scheduled: summary_refresh",
    ]
    assert (report.pending, report.set_aside, report.jobs) == ([], [], ["summary_refresh"])
    assert 0 < report.model_seconds <= report.seconds
    assert phi.client.unread() == []
    (stored,) = await memory.recent(namespace=user_namespace(alice.author_did))
    assert (stored.kind, stored.content) == (
        "interaction",
        f"@alice.test: {alice.text}\n@phi.test: hi @alice.test",
    )
    assert stored.author == alice.author_did
    assert stored.source_uris == (alice.uri, "at://did:plc:phi/app.bsky.feed.post/r1")
    assert stored.created_at == phi.clock.now
    assert stored.thread == alice.uri  # a mention starts its own thread
    assert stored.meta["turns"] == [
        {"speaker": "@alice.test", "text": alice.text, "by_phi": False},
        {"speaker": "@phi.test", "text": "hi @alice.test", "by_phi": True},
    ]
    assert health["counters"] == {
        "dropped": 1,
        "runs_notifications": 1,
        "interactions_stored": 2,
    }


async def test_a_reply_to_a_post_without_text_is_posted_but_not_remembered(
    open_phi: Open, memory: Memory
) -> None:
    # An image with no words: nothing of theirs to keep (an empty turn is no interaction).
    picture, words = replace(mention(1), text=""), mention(2, handle="bob.test")
    async with open_phi(feed=[picture, words]) as phi:
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert phi.client.replies == [("hi @alice.test", picture.uri), ("hi @bob.test", words.uri)]
    assert [r.to_did for r in report.replies] == [picture.author_did, words.author_did]
    # The reply after it is remembered all the same.
    assert [n.namespace for n in await memory.namespaces()] == [user_namespace(words.author_did)]
    assert health["counters"]["interactions_stored"] == 1
    assert report.pending == []


async def test_a_failed_run_keeps_what_it_did_and_the_rest_waits(
    open_phi: Open, memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = mention(1), mention(2, handle="bob.test")

    async def reply_then_break(prompt: str, step: int) -> list[ToolCallPart]:
        if step == 0:
            return [call("reply_to", uri=first.uri, text="hello alice")]
        raise ConnectionResetError("connection reset by peer")

    async with open_phi(reply_then_break, feed=[first, second]) as phi:
        with caplog.at_level(logging.INFO, logger="phi.runtime"):
            failed = await phi.runtime.tick()
        health = await phi.runtime.health()
        assert failed.pending == [second]
        assert failed.output == "failed: connection reset by peer"
        assert failed.actions == [
            "replied to @alice.test: hello alice",
            "the notifications run failed: connection reset by peer",
        ]
        assert [r.in_reply_to for r in failed.replies] == [first.uri]
        (broke,) = [r for r in caplog.records if r.levelno == logging.ERROR]
        # Not the brain's own failure: the log keeps its traceback.
        assert broke.getMessage() == "notifications run failed"
        assert broke.exc_info is not None and broke.exc_info[0] is ConnectionResetError
        assert "notifications run: failed: connection reset by peer" in [
            r.getMessage() for r in caplog.records
        ]
        assert health["counters"]["runs_failed"] == 1
        assert health["pending"] == {"waiting": 1, "set_aside": 0}
        # What it replied to before failing is remembered like any reply.
        assert len(await memory.recent(namespace=user_namespace(first.author_did))) == 1
        phi.brain.decide = reply_to_everyone
        phi.clock.advance(30)
        retried = await phi.runtime.tick()
    assert retried.admitted == [second]
    assert "again after a failed run: mention from @bob.test" in phi.said
    assert phi.client.replies == [("hello alice", first.uri), ("hi @bob.test", second.uri)]
    assert (retried.pending, retried.set_aside) == ([], [])


async def test_an_error_without_a_message_is_shown_by_its_type(open_phi: Open) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise RuntimeError

    async with open_phi(broken, feed=[mention(1)]) as phi:
        report = await phi.runtime.tick()
        queue = await phi.runtime.inbox.queue()
    assert report.output == "failed: RuntimeError"
    assert [e.error for e in queue.entries] == ["RuntimeError: RuntimeError"]


async def test_the_brains_own_failure_is_logged_without_a_traceback(
    open_phi: Open, caplog: pytest.LogCaptureFixture
) -> None:
    async def nonsense(prompt: str, step: int) -> list[ToolCallPart]:
        raise UnexpectedModelBehavior("the model answered nothing usable")

    async with open_phi(nonsense, feed=[mention(1)]) as phi:
        with caplog.at_level(logging.ERROR, logger="phi.runtime"):
            report = await phi.runtime.tick()
    assert report.output == "failed: the model answered nothing usable"
    (logged,) = caplog.records
    assert logged.getMessage() == "notifications run failed: the model answered nothing usable"
    assert logged.exc_info is None


async def test_a_batch_that_keeps_failing_is_set_aside(open_phi: Open) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise UnexpectedModelBehavior("overloaded")

    async with open_phi(broken, feed=[mention(1)]) as phi:
        first = await phi.runtime.tick()
        phi.clock.advance(30)
        last = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert (first.pending, first.set_aside) == ([mention(1)], [])
    assert (last.admitted, last.pending, last.set_aside) == ([mention(1)], [], [mention(1)])
    assert health["pending"] == {"waiting": 0, "set_aside": 1}
    assert health["counters"]["set_aside"] == 1


async def test_a_deleted_post_is_dropped_and_the_rest_answered(open_phi: Open) -> None:
    kept, gone = mention(1), mention(2, handle="bob.test")
    async with open_phi(feed=[kept, gone]) as phi:
        phi.client.deleted.add(gone.uri)
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert report.admitted == [kept]
    assert report.dropped == [(gone, "post deleted")]
    assert gone.uri not in phi.brain.prompts[0]
    assert phi.client.replies == [("hi @alice.test", kept.uri)]
    assert phi.client.unread() == []
    assert health["counters"]["dropped"] == 1


async def test_a_batch_whose_posts_are_all_gone_runs_nothing_and_is_marked_seen(
    open_phi: Open,
) -> None:
    gone = mention(1)
    async with open_phi(feed=[gone]) as phi:
        phi.client.deleted.add(gone.uri)
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert (report.admitted, report.dropped, report.output) == ([], [(gone, "post deleted")], None)
    assert phi.brain.prompts == []
    assert "runs_notifications" not in health["counters"]
    assert phi.client.unread() == []


async def test_a_batch_that_fails_to_build_is_left_unread(
    open_phi: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = mention(1)
    async with open_phi(feed=[asked]) as phi:
        threads = phi.client.get_thread

        async def broken(uri: str, **kwargs: Any) -> Any:
            raise OSError("the AppView is unreachable")

        monkeypatch.setattr(phi.client, "get_thread", broken)
        with pytest.raises(OSError, match="the AppView is unreachable"):
            await phi.runtime.tick()
        assert (phi.client.seen_calls, phi.client.replies) == ([], [])
        monkeypatch.setattr(phi.client, "get_thread", threads)
        again = await phi.runtime.tick()
        counted = phi.runtime.admission.rate_limit.count(asked.author_did, phi.clock.now)
    assert again.admitted == [asked]
    assert phi.client.replies == [("hi @alice.test", asked.uri)]
    assert counted == 1


async def test_only_screened_out_notifications_are_marked_seen_without_a_run(
    open_phi: Open,
) -> None:
    own = mention(1, handle="phi.test", did=PHI.did)
    async with open_phi(feed=[own]) as phi:
        report = await phi.runtime.tick()
    assert (report.admitted, report.dropped, report.output) == ([], [(own, "own")], None)
    assert phi.brain.prompts == []
    assert phi.client.seen_calls == [own.indexed_at + timedelta(milliseconds=1)]
    assert phi.said == ["scheduled: summary_refresh"]


async def test_nothing_unread_marks_nothing(open_phi: Open) -> None:
    async with open_phi() as phi:
        report = await phi.runtime.tick()
    assert (report.admitted, report.dropped, phi.client.seen_calls) == ([], [], [])
    assert phi.client.requests == [(50, None)]


async def test_paging_follows_the_runtime_settings(open_phi: Open) -> None:
    feed = [mention(n) for n in range(1, 6)]
    async with open_phi(
        stay_silent, feed=feed, notification_page=2, max_notification_pages=2
    ) as phi:
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
        await phi.runtime.preview()
    assert report.admitted == feed[1:]
    # The run finished without answering: nothing of it waits for another run.
    assert (report.pending, health["pending"]) == ([], {"waiting": 0, "set_aside": 0})
    assert phi.client.requests[:2] == [(2, None), (2, "2")]
    assert health["counters"]["notification_pages_exhausted"] == 1
    assert phi.client.requests[2:] == [(2, None)]  # the preview pages the same way


async def test_paused_it_neither_reads_nor_marks(open_phi: Open) -> None:
    async with open_phi(feed=[mention(1)]) as phi:
        states = [phi.runtime.paused]
        await phi.runtime.pause()
        states.append(phi.runtime.paused)
        paused = await phi.runtime.tick()
        health = await phi.runtime.health()
        assert (phi.client.requests, phi.client.seen_calls, paused.jobs) == ([], [], [])
        assert health["last_tick"] == phi.clock.now.isoformat()
        await phi.runtime.resume()
        states.append(phi.runtime.paused)
        resumed = await phi.runtime.tick()
    assert states == [False, True, False]
    assert resumed.admitted == [mention(1)]
    assert phi.said[:2] == ["paused: notifications accumulate until resume", "resumed"]


async def test_without_a_watcher_the_lines_go_to_the_log(
    open_phi: Open, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_phi(feed=[mention(1)], emit=False) as phi:
        with caplog.at_level(logging.INFO, logger="phi.runtime"):
            await phi.runtime.pause()
            await phi.runtime.resume()
    assert [r.getMessage() for r in caplog.records] == [
        "paused: notifications accumulate until resume",
        "resumed",
    ]
    assert phi.said == []


async def test_health_before_any_tick(open_phi: Open) -> None:
    async with open_phi() as phi:
        health = await phi.runtime.health()
    assert health == {
        "handle": "phi.test",
        "last_tick": None,
        "counters": {},
        "services": {},
        "pending": {"waiting": 0, "set_aside": 0},
    }


async def test_the_deps_of_a_run_are_complete_when_built(open_phi: Open, memory: Memory) -> None:
    async with open_phi() as phi:
        runtime = phi.runtime
        lines: list[str] = []
        deps = runtime.deps(
            "musing",
            phi.clock.now,
            last_post_text="the river is loud",
            service_report="x went down",
            actions=lines,
        )
        fresh = runtime.deps("notifications", phi.clock.now)
        runtime.small = SmallModel(model=TestModel(), memory=memory)
        learning = runtime.deps("reflection", phi.clock.now)
    assert (deps.client, deps.memory, deps.blocks, deps.small) == (
        runtime.client,
        memory,
        runtime.blocks,
        None,
    )
    assert (deps.config, deps.caches, deps.entry, deps.batch, deps.now) == (
        runtime.config,
        runtime.caches,
        "musing",
        None,
        phi.clock.now,
    )
    assert (deps.last_post_text, deps.service_report) == ("the river is loud", "x went down")
    deps.activity.record("posted: hello")
    assert lines == ["posted: hello"] and phi.said == ["posted: hello"]
    assert (fresh.last_post_text, fresh.service_report, fresh.activity.actions) == (None, None, [])
    assert fresh.activity.actions is not deps.activity.actions
    assert learning.small is runtime.small


# -- the loop --------------------------------------------------------------------------------


async def test_serve_ticks_until_stopped_and_outlives_a_failing_tick(
    open_phi: Open, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = anyio.Event()
    async with open_phi(feed=[mention(1)], poll_seconds=0.01) as phi:
        listed = phi.client.list_notifications
        calls: list[int] = []

        async def flaky(**kwargs: Any) -> Any:
            calls.append(1)
            if len(calls) == 1:
                raise NotFound("listNotifications: no such thing")  # one of phi's errors
            if len(calls) == 2:
                raise ValueError("unexpected shape in listNotifications")  # a bug
            if len(calls) == 4:
                stop.set()
            return await listed(**kwargs)

        monkeypatch.setattr(phi.client, "list_notifications", flaky)
        with caplog.at_level(logging.ERROR, logger="phi.runtime"), anyio.fail_after(20):
            await phi.runtime.serve(stop)
        health = await phi.runtime.health()
    assert len(calls) == 4  # no tick after the stop
    assert phi.client.replies == [("hi @alice.test", mention(1).uri)]
    assert health["counters"]["tick_errors"] == 2
    known, bug = caplog.records
    assert (known.getMessage(), known.exc_info) == (
        "tick failed: listNotifications: no such thing was not found; check the identifier",
        None,
    )
    assert bug.getMessage() == "tick failed" and bug.exc_info is not None
    assert bug.exc_info[0] is ValueError


async def test_a_tick_waits_for_the_one_before(open_phi: Open) -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def slow(prompt: str, step: int) -> list[ToolCallPart]:
        started.set()
        await release.wait()
        return []

    async with open_phi(slow, feed=[mention(1)]) as phi:
        reports: list[Any] = []

        async def tick() -> None:
            reports.append(await phi.runtime.tick())

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tick)
            await started.wait()
            tasks.start_soon(tick)
            await anyio.sleep(0.05)
            # The second tick has not read anything while the first one runs.
            assert len(phi.client.requests) == 1
            release.set()
    assert [r.admitted for r in reports] == [[mention(1)], []]


# -- scheduled jobs --------------------------------------------------------------------------

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


async def test_a_due_musing_runs_with_the_last_post_and_its_slot_is_kept(
    open_phi: Open, memory: Memory
) -> None:
    async with open_phi(muse, schedule=MUSING) as phi:
        phi.client.own_posts = [own_post("the river is loud today", at=START - timedelta(days=1))]
        report = await phi.runtime.tick()
        again = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert report.jobs == ["musing", "summary_refresh"]
    assert again.jobs == []
    assert phi.client.posts == [("the herons are back", None)]
    (prompt,) = phi.brain.prompts
    assert "the river is loud today" in prompt
    assert set(phi.client.own_asked) == {1}  # only the newest post is read for it
    assert "scheduled: musing" in phi.said
    assert health["counters"] == {"runs_musing": 1}
    fired = await ScheduleState(memory).load()
    assert fired.musings == {(START.date(), START.hour)}


async def test_a_musing_the_brain_fails_is_logged_and_its_slot_used(
    open_phi: Open, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise UnexpectedModelBehavior("no answer")

    async with open_phi(broken, schedule=MUSING) as phi:
        with caplog.at_level(logging.ERROR, logger="phi.runtime"):
            report = await phi.runtime.tick()
        again = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert (report.jobs, again.jobs) == (["musing", "summary_refresh"], [])
    assert health["counters"] == {"runs_musing": 1, "runs_failed": 1}
    assert [r.getMessage() for r in caplog.records] == ["musing run failed: no answer"]


async def test_a_musing_that_breaks_otherwise_ends_the_tick_and_stays_due(
    open_phi: Open, memory: Memory
) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise ConnectionResetError("reset")

    async with open_phi(broken, schedule=MUSING) as phi:
        with pytest.raises(ConnectionResetError):
            await phi.runtime.tick()
        assert phi.runtime.schedule.due(phi.clock.now) == ["musing", "summary_refresh"]
    assert await ScheduleState(memory).load() == Fired()


async def test_seed_recovers_the_used_slots_from_memory_and_own_posts(
    open_phi: Open, memory: Memory
) -> None:
    hours = ScheduleConfig(
        musing_hours=frozenset({START.hour, START.hour + 1, START.hour + 2}),
        reflection_hour=None,
        summary_refresh_every=timedelta(days=365),
    )
    await ScheduleState(memory).save(Fired(musings=frozenset({(START.date(), START.hour)})))
    async with open_phi(muse, schedule=hours) as phi:
        phi.client.own_posts = [
            own_post("an hour later", at=START + timedelta(hours=1, minutes=2)),
            # A repost in phi's feed is someone else's post: it used no slot of phi's.
            replace(
                own_post("not phi's", at=START + timedelta(hours=2, minutes=1)),
                author_did="did:plc:someone",
            ),
        ]
        await phi.runtime.seed()
        due = [phi.runtime.schedule.due(phi.clock.now + timedelta(hours=h)) for h in (0, 1, 2)]
    assert due == [["summary_refresh"], ["summary_refresh"], ["musing", "summary_refresh"]]
    assert phi.client.own_asked == [50]


async def test_post_now_muses_at_once_and_uses_the_slot(open_phi: Open, memory: Memory) -> None:
    async with open_phi(muse, schedule=MUSING) as phi:
        output = await phi.runtime.post_now()
        due = phi.runtime.schedule.due(phi.clock.now)
    assert output == "done"
    assert phi.client.posts == [("the herons are back", None)]
    assert due == ["summary_refresh"]
    assert (await ScheduleState(memory).load()).musings == {(START.date(), START.hour)}


def finds_nothing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A memory model that reads the exchanges and finds no durable fact in them."""
    (output,) = info.output_tools
    return ModelResponse(parts=[ToolCallPart(tool_name=output.name, args={"observations": []})])


async def test_the_reflection_runs_after_extraction_when_there_is_a_memory_model(
    open_phi: Open, memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    reflect = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=START.hour,
        summary_refresh_every=timedelta(days=365),
    )
    await memory.remember(
        NewRow.interaction(
            [Turn(speaker="@alice.test", text="I moved to Hamburg last spring")],
            namespace=user_namespace("did:plc:alice"),
            author="did:plc:alice",
        )
    )
    async with open_phi(muse, schedule=reflect) as phi:
        phi.client.own_posts = [own_post("what a day", at=START)]
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
    # Without a memory model: no extraction (nothing would make it), the run itself goes on.
    assert report.jobs == ["reflection", "summary_refresh"]
    assert health["counters"] == {"runs_reflection": 1}
    assert "what a day" in phi.brain.prompts[0]
    small = SmallModel(model=FunctionModel(finds_nothing), memory=memory)
    async with open_phi(muse, schedule=reflect, small=small) as phi:
        with caplog.at_level(logging.INFO, logger="phi.runtime"):
            await phi.runtime.tick()
    assert small.calls["extract"] == 1
    # What extraction did is in the log `phi run` keeps (nothing found: no action).
    assert "reflection: extraction {}" in [r.getMessage() for r in caplog.records]


async def test_the_summary_refresh_needs_a_memory_model(
    open_phi: Open, memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    every_day = ScheduleConfig(musing_hours=frozenset(), reflection_hour=None)
    for n in range(5):  # enough new exchanges for a summary
        await memory.remember(
            NewRow.interaction(
                [Turn(speaker="@alice.test", text=f"a heron again, the {n}th this week")],
                namespace=user_namespace("did:plc:alice"),
                author="did:plc:alice",
            )
        )
    async with open_phi(schedule=every_day) as phi:
        skipped = await phi.runtime.tick()
    small = SmallModel(model=TestModel(), memory=memory)
    async with open_phi(schedule=every_day, small=small) as phi:
        with caplog.at_level(logging.INFO, logger="phi.runtime"):
            refreshed = await phi.runtime.tick()
    assert skipped.jobs == refreshed.jobs == ["summary_refresh"]
    assert small.calls["summarize"] == 1
    assert "summary refresh: 1 people" in [r.getMessage() for r in caplog.records]


# -- the service check -----------------------------------------------------------------------


@dataclass
class Health:
    """Health URLs on 127.0.0.1 answering `status` (or nothing, when `silent`)."""

    status: int = 200
    silent: bool = False
    server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return self.at("/health")

    def at(self, path: str) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}{path}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        if self.silent:
            await reader.read()  # until the client gives up
            writer.close()
            return
        writer.write(
            f"HTTP/1.1 {self.status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        writer.close()


@pytest.fixture
async def health_server() -> AsyncIterator[Health]:
    health = Health()
    health.server = await asyncio.start_server(health.serve, "127.0.0.1", 0)
    yield health
    health.server.close()
    await health.server.wait_closed()


async def test_the_service_check_runs_phi_only_on_a_change(
    open_phi: Open, health_server: Health
) -> None:
    checks = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=None,
        summary_refresh_every=timedelta(days=365),
        service_check_every=timedelta(hours=1),
        health_urls=(health_server.url, health_server.at("/ready")),
    )
    async with open_phi(stay_silent, schedule=checks) as phi:
        assert (await phi.runtime.tick()).jobs == ["summary_refresh"]
        health_server.status = 503
        phi.clock.advance(3600)
        down = await phi.runtime.tick()
        down_health = await phi.runtime.health()
        phi.clock.advance(3600)
        still = await phi.runtime.tick()
        health_server.status = 200
        phi.clock.advance(3600)
        await phi.runtime.tick()
        up_health = await phi.runtime.health()
    assert (down.jobs, still.jobs) == (["service_check"], ["service_check"])
    first, second = phi.brain.prompts
    ready = health_server.at("/ready")
    # One line per service that changed.
    assert f"{health_server.url} went down (503)\n{ready} went down (503)" in first
    assert f"{health_server.url} recovered\n{ready} recovered" in second
    assert down_health["services"] == {health_server.url: False, ready: False}
    assert up_health["services"] == {health_server.url: True, ready: True}
    assert up_health["counters"] == {"runs_service_check": 2}


async def test_a_health_url_that_never_answers_is_down_after_ten_seconds(
    open_phi: Open, health_server: Health
) -> None:
    checks = ScheduleConfig(
        musing_hours=frozenset(),
        reflection_hour=None,
        summary_refresh_every=timedelta(days=365),
        service_check_every=timedelta(hours=1),
        health_urls=(health_server.url,),
    )
    health_server.silent = True
    async with open_phi(stay_silent, schedule=checks) as phi:
        await phi.runtime.tick()
        phi.clock.advance(3600)
        with anyio.fail_after(30):  # the check gives up after 10 s: the tick goes on
            report = await phi.runtime.tick()
    assert report.jobs == ["service_check"]
    (prompt,) = phi.brain.prompts
    assert f"{health_server.url} went down (ReadTimeout)" in prompt


# -- the control API's calls -----------------------------------------------------------------


OBSERVATION = re.compile(r"^(o\d+): (.*) \(noted", re.MULTILINE)


def promote_recommendations(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Promotes each observation that is a recommendation, keeps the rest."""
    (output,) = info.output_tools
    verdicts = [
        {"key": key, "verdict": "promote", "card": text}
        if "recommends" in text
        else {"key": key, "verdict": "keep"}
        for key, text in OBSERVATION.findall(str(getattr(messages[-1].parts[-1], "content", "")))
    ]
    return ModelResponse(parts=[ToolCallPart(tool_name=output.name, args={"verdicts": verdicts})])


async def test_review_now_needs_a_memory_model_and_says_what_it_did(
    open_phi: Open, memory: Memory
) -> None:
    async with open_phi() as phi:
        with pytest.raises(UserError) as refused:
            await phi.runtime.review_now()
        assert str(refused.value) == (
            "no memory model: review needs PHI_MEMORY_MODEL (or the local model)"
        )
        phi.runtime.small = SmallModel(model=FunctionModel(promote_recommendations), memory=memory)
        nothing = await phi.runtime.review_now()
        said: list[str] = []
        for text in (
            "alice lives in hamburg",
            "alice recommends the heron hide at the lake",
            "alice recommends the reed walk at dawn",
        ):
            await memory.remember(
                NewRow(
                    content=text,
                    namespace=user_namespace("did:plc:alice"),
                    kind="observation",
                    author="did:plc:alice",
                )
            )
            if not said:
                said.append(await phi.runtime.review_now())
        reviewed = await phi.runtime.review_now()
    assert nothing == "reviewed 0 observations: nothing to review"
    assert said == ["reviewed 1 observation: 1 kept"]
    assert reviewed == (
        "reviewed 3 observations: 1 kept, 2 promoted; published "
        "at://did:plc:phi/io.phi.record/1, at://did:plc:phi/io.phi.record/2"
    )
    assert ["heron hide" in str(c) for c in phi.client.records] == [True, False]


# -- what the operator sees ------------------------------------------------------------------


async def test_the_preview_shows_the_next_batch_without_touching_it(
    open_phi: Open, memory: Memory
) -> None:
    secret = replace(
        mention(1), text="@phi.test my key is ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    )
    own = mention(2, handle="phi.test", did=PHI.did)
    async with open_phi(feed=[secret, own]) as phi:
        # alice is a stranger with a profile: a tick would write what it found to memory.
        phi.client.profiles = {
            secret.author_did: Profile(did=secret.author_did, handle="alice.test")
        }
        phi.client.own_posts = [own_post("the river is loud today", at=START)]
        shown = await phi.runtime.preview()
        # The prompt's cached blocks are warm now: a notification preview does not fetch
        # phi's latest post for itself (only a musing's or a reflection's shows it).
        warm = len(phi.client.own_asked)
        assert await phi.runtime.preview() == shown
        assert phi.client.own_asked[warm:] == []
        musing = await phi.runtime.preview("musing")
        reflection = await phi.runtime.preview("reflection")
        counted = phi.runtime.admission.rate_limit.count(secret.author_did, phi.clock.now)
        assert await memory.namespaces() == []  # a preview writes nothing
        assert set(phi.client.own_asked) == {1}
        await phi.runtime.tick()
        researched = [n.namespace for n in await memory.namespaces()]
    assert secret.uri in shown and own.uri not in shown
    assert "[REDACTED:github-token]" in shown and "ghp_" not in shown
    assert "the river is loud today" not in shown
    assert "the river is loud today" in musing and "the river is loud today" in reflection
    assert secret.uri not in musing
    assert (phi.client.seen_calls[:-1], phi.client.replies[:-1], counted) == ([], [], 0)
    assert len(phi.brain.prompts) == 1  # the tick's
    assert researched == [user_namespace(secret.author_did)]


async def test_the_preview_shows_what_waits_once_it_is_due(open_phi: Open) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise UnexpectedModelBehavior("overloaded")

    async with open_phi(broken, feed=[mention(1)]) as phi:
        await phi.runtime.tick()
        waiting = await phi.runtime.preview()
        phi.clock.advance(30)
        due = await phi.runtime.preview()
    assert mention(1).uri not in waiting
    assert mention(1).uri in due


async def test_an_owner_like_on_a_pending_request_reaches_the_run(
    open_phi: Open, memory: Memory
) -> None:
    like = mention(1, handle="phi-operator.test", did="did:plc:operator", reason="like")
    assert like.reason_subject is not None
    request = {
        "tool": "follow_user",
        "args": [["handle", "carol.test"]],
        "thread_root": like.reason_subject,
        "owner_did": "did:plc:operator",
        "status": "pending",
    }
    await memory.state.write(REQUEST_SCOPE, like.reason_subject, json.dumps(request))
    approval = (
        f"[OWNER APPROVAL] @phi-operator.test liked your authorization request "
        f"{like.reason_subject}: it approves exactly follow_user(handle='carol.test')"
    )
    async with open_phi(stay_silent, feed=[like]) as phi:
        previewed = await phi.runtime.preview()
        await phi.runtime.tick()
    assert approval in previewed
    assert approval in phi.brain.prompts[0]


async def test_health_names_services_without_their_credentials(open_phi: Open) -> None:
    async with open_phi() as phi:
        phi.runtime._service_up = {"http://user:hunter2@127.0.0.1:9/health": False}
        health = await phi.runtime.health()
    assert health["services"] == {"http://127.0.0.1:9/health": False}


async def test_each_run_is_journalled_with_its_own_actions(open_phi: Open, tmp_path: Any) -> None:
    journal = RunJournal(path=tmp_path / "runs.db")
    async with open_phi(feed=[mention(1)], schedule=MUSING, journal=journal) as phi:
        phi.brain.decide = reply_or_muse
        await phi.runtime.tick()
    musing, notifications = await journal.recent()
    assert (notifications.entry, notifications.outcome) == ("notifications", "ok")
    assert notifications.actions == ("replied to @alice.test: hi @alice.test",)
    assert (musing.entry, musing.actions) == ("musing", ("posted: the herons are back",))


async def reply_or_muse(prompt: str, step: int) -> list[ToolCallPart]:
    if mentions(prompt):
        return await reply_to_everyone(prompt, step)
    return await muse(prompt, step)


async def test_a_tick_reports_its_time_and_the_model_share_of_it(open_phi: Open) -> None:
    slow = [1.0]

    async def think(prompt: str, step: int) -> list[ToolCallPart]:
        if slow:
            await anyio.sleep(slow.pop())
        return []

    async with open_phi(think, feed=[mention(1)]) as phi:
        first = await phi.runtime.tick()
        phi.client.feed.append(mention(2))
        second = await phi.runtime.tick()
    assert 1.0 <= first.model_seconds <= first.seconds < 30
    # Each tick counts its own model time, not the time of the ticks before it.
    assert second.model_seconds < 1.0 and second.model_seconds <= second.seconds


async def test_a_runtime_without_a_model_timer_reports_no_model_time(open_phi: Open) -> None:
    async with open_phi(feed=[mention(1)], timed=False) as phi:
        report = await phi.runtime.tick()
    assert report.admitted == [mention(1)]
    assert report.model_seconds == 0.0 and report.seconds > 0
