"""The inbox (`phi.runtime.inbox`) between a feed served page by page and a real memory
file: what a tick takes in (fresh, due, dropped), what `peek` shows without counting, and
what `close` leaves behind (the queue saved only when it changed, the unread marked seen up
to the newest one handled, even when saving failed)."""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from tests.agent._network import PHI
from tests.runtime._feed import START, FeedClient, as_client, mention

from phi.errors import StoreError
from phi.memory import Memory
from phi.runtime import pending
from phi.runtime.inbox import Inbox, Intake
from phi.runtime.pending import STATE_SCOPE, Backoff, PendingQueue, PendingStore
from phi.runtime.ratelimit import STATE_SCOPE as WINDOW_SCOPE
from phi.runtime.ratelimit import Admission, AuthorRateLimit

pytestmark = pytest.mark.anyio

NOW = START + timedelta(minutes=5)
BACKOFF = Backoff(base_seconds=30, max_seconds=100, attempts=2)


@dataclass
class Watched:
    """An inbox with the runtime's `say` and `count` as lists."""

    client: FeedClient
    inbox: Inbox
    said: list[str] = field(default_factory=list)
    counted: Counter[str] = field(default_factory=Counter)


def watched(memory: Memory, client: FeedClient, *, per_hour: int = 30) -> Watched:
    said: list[str] = []
    counted: Counter[str] = Counter()

    def count(name: str) -> None:
        counted[name] += 1

    inbox = Inbox(
        client=as_client(client),
        memory=memory,
        admission=Admission(self_did=PHI.did, rate_limit=AuthorRateLimit(per_hour)),
        say=said.append,
        count=count,
    )
    return Watched(client=client, inbox=inbox, said=said, counted=counted)


async def history(memory: Memory, scope: str, key: str) -> int:
    return len(await memory.store.state_history(scope, key, limit=50))


async def test_take_screens_the_unread_and_close_marks_them_seen(memory: Memory) -> None:
    own = mention(2, handle="phi.test", did=PHI.did)
    client = FeedClient(feed=[mention(1), own, mention(3, handle="bob.test")])
    w = watched(memory, client)
    intake = await w.inbox.take(NOW, page_size=50, max_pages=20)
    assert intake.unread == [mention(1), own, mention(3, handle="bob.test")]
    assert [(d.notification, d.reason) for d in intake.dropped] == [(own, "own")]
    assert (intake.due, intake.fresh) == ([], [mention(1), mention(3, handle="bob.test")])
    assert intake.batched == intake.fresh
    assert w.counted == Counter({"dropped": 1})
    assert w.inbox.admission.rate_limit.count("did:plc:alice", NOW) == 1
    settled = await w.inbox.close(
        intake, done={mention(1).uri}, failure=None, now=NOW, backoff=BACKOFF
    )
    assert settled.queue == PendingQueue(account=PHI.did)
    # Up to the newest one read, 1 ms past it (`isRead` is `seenAt > indexedAt`).
    assert client.seen_calls == [mention(3).indexed_at + timedelta(milliseconds=1)]
    assert client.unread() == []
    # Nothing failed: no queue was written, nothing said.
    assert await memory.state.read(STATE_SCOPE, PHI.did) is None
    assert w.said == []


async def test_nothing_unread_reads_once_and_writes_nothing(memory: Memory) -> None:
    client = FeedClient()
    w = watched(memory, client)
    intake = await w.inbox.take(NOW, page_size=50, max_pages=20)
    assert intake == Intake(unread=[], dropped=[], due=[], fresh=[])
    await w.inbox.close(intake, done=(), failure=None, now=NOW, backoff=BACKOFF)
    assert (client.requests, client.seen_calls) == ([(50, None)], [])
    # Not screened: the rate-limit window was neither read nor written.
    assert await memory.state.read(WINDOW_SCOPE, "authors") is None


async def test_a_failed_run_keeps_the_rest_and_says_when_it_runs_again(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    a, b, c = mention(1), mention(2), mention(3, handle="bob.test")
    client = FeedClient(feed=[a, b, c])
    w = watched(memory, client)
    intake = await w.inbox.take(NOW, page_size=50, max_pages=20)
    settled = await w.inbox.close(
        intake, done={b.uri}, failure="ModelHTTPError: 529", now=NOW, backoff=BACKOFF
    )
    assert [e.notification for e in settled.waiting] == [a, c]
    assert w.said == [
        "2 notification(s) the failed run left unanswered wait for another (the first in 30s)"
    ]
    # Kept in memory (a restart finds it) and marked seen all the same.
    assert await PendingStore(memory=memory, account=PHI.did).load() == settled.queue
    assert await w.inbox.queue() == settled.queue
    assert client.unread() == []
    # Before its wait is over it is neither due nor fresh, though read again.
    client.seen_at = None
    early = await w.inbox.take(NOW + timedelta(seconds=29), page_size=50, max_pages=20)
    assert (early.due, early.fresh) == ([], [b])
    # Then due, ahead of anything fresh; its second failure is its last (attempts=2).
    client.seen_at = c.indexed_at + timedelta(milliseconds=1)
    client.feed.append(mention(4))
    later = NOW + timedelta(seconds=30)
    again = await w.inbox.take(later, page_size=50, max_pages=20)
    assert (again.due, again.fresh, again.batched) == ([a, c], [mention(4)], [a, c, mention(4)])
    with caplog.at_level(logging.WARNING, logger="phi.runtime"):
        aside = await w.inbox.close(
            again, done={mention(4).uri}, failure="boom", now=later, backoff=BACKOFF
        )
    assert [e.notification for e in aside.set_aside] == [a, c]
    assert w.counted["set_aside"] == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"set aside the mention from @alice.test ({a.uri}) after 2 failed runs, the last: boom "
        "(`phi runs pending`)",
        f"set aside the mention from @bob.test ({c.uri}) after 2 failed runs, the last: boom "
        "(`phi runs pending`)",
    ]
    assert w.said[1:] == []  # nothing waits any more
    assert [
        e.status for e in (await PendingStore(memory=memory, account=PHI.did).load()).entries
    ] == [
        "set-aside",
        "set-aside",
    ]


async def test_the_queue_is_saved_only_when_it_changed(memory: Memory) -> None:
    client = FeedClient(feed=[mention(1)])
    w = watched(memory, client)
    intake = await w.inbox.take(NOW, page_size=50, max_pages=20)
    await w.inbox.close(intake, done=(), failure="boom", now=NOW, backoff=BACKOFF)
    assert await history(memory, STATE_SCOPE, PHI.did) == 1
    # A tick with nothing of the queue's in it leaves the saved queue alone.
    client.feed.append(mention(2))
    quiet = await w.inbox.take(NOW + timedelta(seconds=1), page_size=50, max_pages=20)
    assert quiet.fresh == [mention(2)]
    await w.inbox.close(quiet, done=(), failure=None, now=NOW, backoff=BACKOFF)
    assert await history(memory, STATE_SCOPE, PHI.did) == 1


async def test_seen_even_when_saving_the_queue_fails(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = FeedClient(feed=[mention(1), mention(2)])
    w = watched(memory, client)
    intake = await w.inbox.take(NOW, page_size=50, max_pages=20)

    async def locked(*args: Any, **kwargs: Any) -> None:
        raise StoreError("the memory store is locked by another program")

    monkeypatch.setattr(PendingStore, "save", locked)
    with pytest.raises(StoreError):
        await w.inbox.close(intake, done=(), failure="boom", now=NOW, backoff=BACKOFF)
    assert client.unread() == []
    # This process still knows what waits: the next tick runs it.
    queue = await w.inbox.queue()
    assert [e.notification for e in queue.waiting] == [mention(1), mention(2)]
    due = await w.inbox.take(NOW + timedelta(seconds=30), page_size=50, max_pages=20)
    assert due.due == [mention(1), mention(2)]


async def test_a_queue_saved_by_an_earlier_run_is_loaded_once(memory: Memory) -> None:
    queue = (
        PendingQueue(account=PHI.did)
        .settle([mention(1)], done=(), failure="boom", now=START, backoff=BACKOFF)
        .queue
    )
    await PendingStore(memory=memory, account=PHI.did).save(queue)
    w = watched(memory, FeedClient())
    assert await w.inbox.queue() == queue
    await memory.state.erase(STATE_SCOPE, PHI.did)
    assert await w.inbox.queue() == queue  # this process's copy, not read again
    intake = await w.inbox.take(NOW, page_size=50, max_pages=20)
    assert intake.due == [mention(1)]


async def test_peek_shows_what_take_would_run_without_counting(memory: Memory) -> None:
    own = mention(3, handle="phi.test", did=PHI.did)
    queued, fresh = mention(1), mention(2)
    waiting = (
        PendingQueue(account=PHI.did)
        .settle([queued], done=(), failure="boom", now=START, backoff=BACKOFF)
        .queue
    )
    await PendingStore(memory=memory, account=PHI.did).save(waiting)
    client = FeedClient(feed=[queued, fresh, own])
    w = watched(memory, client)
    assert await w.inbox.peek(START, page_size=50, max_pages=20) == [fresh]
    assert await w.inbox.peek(NOW, page_size=50, max_pages=20) == [queued, fresh]
    assert w.inbox.admission.rate_limit.count("did:plc:alice", NOW) == 0
    assert (client.seen_calls, w.counted) == ([], Counter())
    assert await memory.state.read(WINDOW_SCOPE, "authors") is None
    assert client.requests[0] == (50, None)
    await w.inbox.peek(NOW, page_size=2, max_pages=1)
    assert client.requests[-1] == (2, None)


async def test_the_rate_limit_window_is_restored_once_and_saved_after_each_screen(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    client = FeedClient(feed=[mention(1), mention(2, handle="bob.test")])
    first = watched(memory, client, per_hour=1)
    await first.inbox.take(NOW, page_size=50, max_pages=20)
    assert await history(memory, WINDOW_SCOPE, "authors") == 1
    # A restart: the saved window comes back, alice's second notification is over her limit.
    client.seen_at, client.feed = None, [mention(3)]
    restarted = watched(memory, client, per_hour=1)
    with caplog.at_level(logging.INFO, logger="phi.runtime"):
        intake = await restarted.inbox.take(NOW, page_size=50, max_pages=20)
    assert [(d.notification, d.reason) for d in intake.dropped] == [
        (mention(3), "rate limit: 1/hour from @alice.test")
    ]
    assert restarted.counted == Counter({"dropped": 1})
    assert "dropped mention from @alice.test: rate limit: 1/hour from @alice.test" in [
        r.getMessage() for r in caplog.records
    ]
    assert await history(memory, WINDOW_SCOPE, "authors") == 2
    # Loaded once: what another writer saves later does not come into this process's
    # window (carol's admission there would put her over her limit).
    elsewhere = json.dumps({"did:plc:carol": [[NOW.isoformat(), "at://elsewhere"]]})
    await memory.state.write(WINDOW_SCOPE, "authors", elsewhere)
    client.feed = [mention(4, handle="carol.test")]
    again = await restarted.inbox.take(NOW, page_size=50, max_pages=20)
    assert (again.fresh, again.dropped) == ([mention(4, handle="carol.test")], [])


async def test_paging_past_the_bound_is_counted_and_warned(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    client = FeedClient(feed=[mention(n) for n in range(1, 6)])
    w = watched(memory, client)
    with caplog.at_level(logging.WARNING, logger="phi.runtime"):
        intake = await w.inbox.take(NOW, page_size=2, max_pages=2)
    assert [n.uri for n in intake.unread] == [mention(n).uri for n in (2, 3, 4, 5)]
    assert client.requests == [(2, None), (2, "2")]
    assert w.counted["notification_pages_exhausted"] == 1
    assert [r.getMessage() for r in caplog.records] == [
        "read 2 pages of unread notifications (4) and stopped: older unread ones will be "
        "marked seen without being handled (raise max_notification_pages)"
    ]
    within = watched(memory, FeedClient(feed=[mention(1)]))
    await within.inbox.take(NOW, page_size=2, max_pages=2)
    assert within.counted["notification_pages_exhausted"] == 0


async def test_trimming_set_aside_entries_is_warned(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pending, "SET_ASIDE_KEPT", 1)
    once = Backoff(attempts=1)
    client = FeedClient(feed=[mention(1)])
    w = watched(memory, client)
    await w.inbox.close(
        await w.inbox.take(NOW, page_size=50, max_pages=20),
        done=(),
        failure="boom",
        now=NOW,
        backoff=once,
    )
    client.feed.append(mention(2))
    with caplog.at_level(logging.WARNING, logger="phi.runtime"):
        settled = await w.inbox.close(
            await w.inbox.take(NOW, page_size=50, max_pages=20),
            done=(),
            failure="bang",
            now=NOW + timedelta(seconds=1),
            backoff=once,
        )
    assert [e.notification for e in settled.trimmed] == [mention(1)]
    assert f"no longer keeping the set-aside {mention(1).uri} (boom): 1 newer ones are kept" in [
        r.getMessage() for r in caplog.records
    ]
