"""The poller's own logic (`phi.runtime.poller`) in process, its notification batches and its
loop: phi's notifications served by a feed double (`_feed.FeedClient`), a real memory file,
the real agent with a scripted brain. The same paths run against the local network in
`test_poller_failures.py` and `tests/agent/test_poller_reliability.py`; these are fast
enough to run per mutant (`tests/mutation/poller.toml`)."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta
from typing import Any

import anyio
import pytest
from pydantic_ai import ToolCallPart
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models.test import TestModel
from tests.agent._brain import call, mentions
from tests.agent._network import PHI
from tests.runtime._feed import mention
from tests.runtime._runtime import (
    MUSING,
    muse,
    open_phi,
    reply_to_everyone,
    stay_silent,
)

from phi.atproto import NotFound
from phi.memory import Memory, user_namespace
from phi.memory.learning import SmallModel
from phi.runtime.journal import RunJournal

pytestmark = pytest.mark.anyio


async def test_a_tick_answers_the_batch_marks_it_seen_and_remembers_each_reply(
    memory: Memory,
) -> None:
    alice, bob = mention(1), mention(2, handle="bob.test")
    own = mention(3, handle="phi.test", did=PHI.did)
    async with open_phi(memory, feed=[alice, bob, own]) as phi:
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


async def test_a_reply_to_a_post_without_text_is_posted_but_not_remembered(memory: Memory) -> None:
    # An image with no words: nothing of theirs to keep (an empty turn is no interaction).
    picture, words = replace(mention(1), text=""), mention(2, handle="bob.test")
    async with open_phi(memory, feed=[picture, words]) as phi:
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert phi.client.replies == [("hi @alice.test", picture.uri), ("hi @bob.test", words.uri)]
    assert [r.to_did for r in report.replies] == [picture.author_did, words.author_did]
    # The reply after it is remembered all the same.
    assert [n.namespace for n in await memory.namespaces()] == [user_namespace(words.author_did)]
    assert health["counters"]["interactions_stored"] == 1
    assert report.pending == []


async def test_a_failed_run_keeps_what_it_did_and_the_rest_waits(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = mention(1), mention(2, handle="bob.test")

    async def reply_then_break(prompt: str, step: int) -> list[ToolCallPart]:
        if step == 0:
            return [call("reply_to", uri=first.uri, text="hello alice")]
        raise ConnectionResetError("connection reset by peer")

    async with open_phi(memory, reply_then_break, feed=[first, second]) as phi:
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


async def test_an_error_without_a_message_is_shown_by_its_type(memory: Memory) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise RuntimeError

    async with open_phi(memory, broken, feed=[mention(1)]) as phi:
        report = await phi.runtime.tick()
        queue = await phi.runtime.inbox.queue()
    assert report.output == "failed: RuntimeError"
    assert [e.error for e in queue.entries] == ["RuntimeError: RuntimeError"]


async def test_the_brains_own_failure_is_logged_without_a_traceback(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    async def nonsense(prompt: str, step: int) -> list[ToolCallPart]:
        raise UnexpectedModelBehavior("the model answered nothing usable")

    async with open_phi(memory, nonsense, feed=[mention(1)]) as phi:
        with caplog.at_level(logging.ERROR, logger="phi.runtime"):
            report = await phi.runtime.tick()
    assert report.output == "failed: the model answered nothing usable"
    (logged,) = caplog.records
    assert logged.getMessage() == "notifications run failed: the model answered nothing usable"
    assert logged.exc_info is None


async def test_a_batch_that_keeps_failing_is_set_aside(memory: Memory) -> None:
    async def broken(prompt: str, step: int) -> list[ToolCallPart]:
        raise UnexpectedModelBehavior("overloaded")

    async with open_phi(memory, broken, feed=[mention(1)]) as phi:
        first = await phi.runtime.tick()
        phi.clock.advance(30)
        last = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert (first.pending, first.set_aside) == ([mention(1)], [])
    assert (last.admitted, last.pending, last.set_aside) == ([mention(1)], [], [mention(1)])
    assert health["pending"] == {"waiting": 0, "set_aside": 1}
    assert health["counters"]["set_aside"] == 1


async def test_a_deleted_post_is_dropped_and_the_rest_answered(memory: Memory) -> None:
    kept, gone = mention(1), mention(2, handle="bob.test")
    async with open_phi(memory, feed=[kept, gone]) as phi:
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
    memory: Memory,
) -> None:
    gone = mention(1)
    async with open_phi(memory, feed=[gone]) as phi:
        phi.client.deleted.add(gone.uri)
        report = await phi.runtime.tick()
        health = await phi.runtime.health()
    assert (report.admitted, report.dropped, report.output) == ([], [(gone, "post deleted")], None)
    assert phi.brain.prompts == []
    assert "runs_notifications" not in health["counters"]
    assert phi.client.unread() == []


async def test_a_batch_that_fails_to_build_is_left_unread(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = mention(1)
    async with open_phi(memory, feed=[asked]) as phi:
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
    memory: Memory,
) -> None:
    own = mention(1, handle="phi.test", did=PHI.did)
    async with open_phi(memory, feed=[own]) as phi:
        report = await phi.runtime.tick()
    assert (report.admitted, report.dropped, report.output) == ([], [(own, "own")], None)
    assert phi.brain.prompts == []
    assert phi.client.seen_calls == [own.indexed_at + timedelta(milliseconds=1)]
    assert phi.said == ["scheduled: summary_refresh"]


async def test_nothing_unread_marks_nothing(memory: Memory) -> None:
    async with open_phi(memory) as phi:
        report = await phi.runtime.tick()
    assert (report.admitted, report.dropped, phi.client.seen_calls) == ([], [], [])
    assert phi.client.requests == [(50, None)]


async def test_paging_follows_the_runtime_settings(memory: Memory) -> None:
    feed = [mention(n) for n in range(1, 6)]
    async with open_phi(
        memory, stay_silent, feed=feed, notification_page=2, max_notification_pages=2
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


async def test_paused_it_neither_reads_nor_marks(memory: Memory) -> None:
    async with open_phi(memory, feed=[mention(1)]) as phi:
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
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_phi(memory, feed=[mention(1)], emit=False) as phi:
        with caplog.at_level(logging.INFO, logger="phi.runtime"):
            await phi.runtime.pause()
            await phi.runtime.resume()
    assert [r.getMessage() for r in caplog.records] == [
        "paused: notifications accumulate until resume",
        "resumed",
    ]
    assert phi.said == []


async def test_health_before_any_tick(memory: Memory) -> None:
    async with open_phi(memory) as phi:
        health = await phi.runtime.health()
    assert health == {
        "handle": "phi.test",
        "last_tick": None,
        "counters": {},
        "services": {},
        "pending": {"waiting": 0, "set_aside": 0},
    }


async def test_the_deps_of_a_run_are_complete_when_built(memory: Memory) -> None:
    async with open_phi(memory) as phi:
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
    memory: Memory, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    stop = anyio.Event()
    async with open_phi(memory, feed=[mention(1)], poll_seconds=0.01) as phi:
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


async def test_a_tick_waits_for_the_one_before(memory: Memory) -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def slow(prompt: str, step: int) -> list[ToolCallPart]:
        started.set()
        await release.wait()
        return []

    async with open_phi(memory, slow, feed=[mention(1)]) as phi:
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


async def test_each_run_is_journalled_with_its_own_actions(memory: Memory, tmp_path: Any) -> None:
    journal = RunJournal(path=tmp_path / "runs.db")
    async with open_phi(memory, feed=[mention(1)], schedule=MUSING, journal=journal) as phi:
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


async def test_a_tick_reports_its_time_and_the_model_share_of_it(memory: Memory) -> None:
    slow = [1.0]

    async def think(prompt: str, step: int) -> list[ToolCallPart]:
        if slow:
            await anyio.sleep(slow.pop())
        return []

    async with open_phi(memory, think, feed=[mention(1)]) as phi:
        first = await phi.runtime.tick()
        phi.client.feed.append(mention(2))
        second = await phi.runtime.tick()
    assert 1.0 <= first.model_seconds <= first.seconds < 30
    # Each tick counts its own model time, not the time of the ticks before it.
    assert second.model_seconds < 1.0 and second.model_seconds <= second.seconds


async def test_a_runtime_without_a_model_timer_reports_no_model_time(memory: Memory) -> None:
    async with open_phi(memory, feed=[mention(1)], timed=False) as phi:
        report = await phi.runtime.tick()
    assert report.admitted == [mention(1)]
    assert report.model_seconds == 0.0 and report.seconds > 0
