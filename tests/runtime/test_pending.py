"""The pending queue's rules (`phi.runtime.pending`): waits that double up to a cap, a
notification set aside after its last allowed failure, what counts as handled, and the
queue kept in a real memory file."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from phi.agent import ActivityLog, Batch, NotificationContext, PhiPost
from phi.atproto import Notification, Post
from phi.atproto.models import Embed, PostRef
from phi.errors import InvalidInput
from phi.memory import Memory
from phi.runtime import pending
from phi.runtime.pending import (
    STATE_SCOPE,
    Backoff,
    PendingQueue,
    PendingStore,
    handled_uris,
    read_pending,
)

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
BACKOFF = Backoff(base_seconds=30, max_seconds=100, attempts=3)


def notification(n: int, *, reason: str = "mention") -> Notification:
    return Notification(
        uri=f"at://did:plc:alice/app.bsky.feed.post/{n}",
        cid=f"cid{n}",
        reason=reason,
        author_did="did:plc:alice",
        author_handle="alice.test",
        text=f"post {n}",
        reason_subject=None,
        is_read=False,
        indexed_at=T0 + timedelta(seconds=n),
        reply_root=PostRef(uri="at://did:plc:alice/app.bsky.feed.post/0", cid="cid0"),
        embed=Embed(kind="images", alt_texts=["a heron"]),
    )


def test_waits_double_up_to_the_cap() -> None:
    assert [BACKOFF.wait(n).total_seconds() for n in (1, 2, 3, 4)] == [30, 60, 100, 100]
    assert Backoff().wait(10_000).total_seconds() == 1800  # no overflow on a long outage
    with pytest.raises(InvalidInput, match="attempts at least 1"):
        Backoff(attempts=0)


def test_a_failed_run_keeps_what_it_left_and_a_finished_one_clears_it() -> None:
    a, b, c = notification(1), notification(2), notification(3)
    queue = PendingQueue(account="did:plc:phi")
    failed = queue.settle(
        [a, b, c], done={b.uri}, failure="ModelHTTPError: 429", now=T0, backoff=BACKOFF
    )
    assert [(e.notification.uri, e.failures, e.retry_at) for e in failed.queue.entries] == [
        (a.uri, 1, T0 + timedelta(seconds=30)),
        (c.uri, 1, T0 + timedelta(seconds=30)),
    ]
    assert failed.queue.due(T0 + timedelta(seconds=29)) == []
    assert failed.queue.due(T0 + timedelta(seconds=30)) == [a, c]
    assert failed.queue.holds(a.uri) and not failed.queue.holds(b.uri)
    # The next run takes a only; it finishes: a is done, c still waits as it was.
    finished = failed.queue.settle([a], done=(), failure=None, now=T0, backoff=BACKOFF)
    assert [e.notification for e in finished.queue.entries] == [c]
    assert finished.queue.entries[0] == failed.queue.entries[1]
    assert (finished.waiting, finished.set_aside) == ([], [])


def test_the_last_allowed_failure_sets_it_aside_for_good() -> None:
    a = notification(1)
    queue = PendingQueue(account="did:plc:phi")
    now = T0
    for failures in (1, 2):
        settled = queue.settle([a], done=(), failure="boom", now=now, backoff=BACKOFF)
        queue = settled.queue
        (entry,) = settled.waiting
        assert (entry.failures, entry.status, entry.first_failed_at) == (failures, "waiting", T0)
        now = entry.retry_at or now
    settled = queue.settle([a], done=(), failure="x" * 1000, now=now, backoff=BACKOFF)
    (aside,) = settled.set_aside
    assert (aside.status, aside.failures, aside.retry_at) == ("set-aside", 3, None)
    assert len(aside.error) == 300 and aside.error.endswith("…")
    assert settled.queue.due(now + timedelta(days=365)) == []
    assert settled.queue.holds(a.uri)
    assert settled.queue.summaries()[0]["status"] == "set-aside"


def test_set_aside_entries_are_kept_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pending, "SET_ASIDE_KEPT", 2)
    once = Backoff(attempts=1)
    queue = PendingQueue(account="did:plc:phi")
    for n in (1, 2, 3):
        at = T0 + timedelta(minutes=n)
        settled = queue.settle([notification(n)], done=(), failure="boom", now=at, backoff=once)
        queue = settled.queue
    assert [e.notification.uri for e in settled.trimmed] == [notification(1).uri]
    assert [e.notification.uri for e in queue.set_aside] == [
        notification(2).uri,
        notification(3).uri,
    ]


def test_handled_means_replied_to_liked_or_reposted_by_either_uri() -> None:
    a, b, c = notification(1), notification(2), notification(3, reason="like")
    # A like notification's post is phi's own post that was liked: another URI.
    liked = Post(
        uri="at://did:plc:phi/app.bsky.feed.post/9",
        cid="cid9",
        author_did="did:plc:phi",
        author_handle="phi.test",
        text="herons!",
        created_at=T0,
    )
    batch = Batch(
        items=[
            NotificationContext(notification=a),
            NotificationContext(notification=b),
            NotificationContext(notification=c, post=liked),
        ]
    )
    activity = ActivityLog(
        posts=[PhiPost(uri="at://phi/1", text="hi", thread_root="r", in_reply_to=a.uri)],
        acted_on=["at://did:plc:bob/app.bsky.feed.post/not-in-the-batch"],
    )
    assert handled_uris(batch, activity) == frozenset({a.uri})
    activity.acted_on.append(liked.uri)
    assert handled_uris(batch, activity) == frozenset({a.uri, c.uri})


@pytest.mark.anyio
async def test_the_queue_is_kept_in_memory_per_account(memory: Memory) -> None:
    store = PendingStore(memory=memory, account="did:plc:phi")
    assert await store.load() == PendingQueue(account="did:plc:phi")
    queue = (
        PendingQueue(account="did:plc:phi")
        .settle([notification(1)], done=(), failure="boom", now=T0, backoff=BACKOFF)
        .queue
    )
    await store.save(queue)
    other = PendingStore(memory=memory, account="did:plc:other")
    await other.save(PendingQueue(account="did:plc:other"))
    assert await store.load() == queue  # the notification whole: refs, embed, times
    assert await read_pending(memory) == [PendingQueue(account="did:plc:other"), queue]


@pytest.mark.anyio
async def test_an_unreadable_queue_starts_empty_and_says_so(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    await memory.state.write(STATE_SCOPE, "did:plc:phi", '{"account": "did:plc:phi", "entr')
    with caplog.at_level(logging.WARNING, logger="phi.runtime"):
        loaded = await PendingStore(memory=memory, account="did:plc:phi").load()
    assert loaded == PendingQueue(account="did:plc:phi")
    assert "pending notifications of did:plc:phi unreadable (version 1 kept)" in caplog.text
