"""The notification screen: own notifications, allow and deny lists, the per-author limit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from phi.atproto import Notification
from phi.config import Settings
from phi.memory import Memory
from phi.runtime.ratelimit import (
    STATE_SCOPE,
    Admission,
    AuthorFilter,
    AuthorRateLimit,
    Dropped,
    WindowState,
)

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
PHI = "did:plc:phi"


def notification(did: str, handle: str, *, n: int = 0) -> Notification:
    return Notification(
        uri=f"at://{did}/app.bsky.feed.post/{n}",
        cid=f"cid{n}",
        reason="mention",
        author_did=did,
        author_handle=handle,
        text=f"hey @phi.test {n}",
        reason_subject=None,
        is_read=False,
        indexed_at=T0,
    )


def test_limit_refuses_the_one_over_and_slides() -> None:
    limit = AuthorRateLimit(3)
    times = [T0, T0 + timedelta(minutes=10), T0 + timedelta(minutes=20)]
    assert [limit.admit("did:plc:a", t) for t in times] == [True, True, True]
    assert limit.admit("did:plc:a", T0 + timedelta(minutes=59)) is False
    assert limit.admit("did:plc:b", T0 + timedelta(minutes=59)) is True
    # Exactly one window after the first admission, that one no longer counts.
    assert limit.admit("did:plc:a", T0 + timedelta(hours=1)) is True
    assert limit.admit("did:plc:a", T0 + timedelta(hours=1, minutes=1)) is False
    assert limit.count("did:plc:a", T0 + timedelta(hours=1, minutes=1)) == 3


def test_refused_attempts_do_not_count() -> None:
    limit = AuthorRateLimit(1, window=timedelta(minutes=10))
    assert limit.admit("did:plc:a", T0) is True
    for minute in range(1, 10):
        assert limit.admit("did:plc:a", T0 + timedelta(minutes=minute)) is False
    assert limit.admit("did:plc:a", T0 + timedelta(minutes=10)) is True
    assert limit.describe() == "1 per 0:10:00"
    assert AuthorRateLimit().describe() == "30/hour"


def test_limit_forgets_quiet_authors() -> None:
    limit = AuthorRateLimit(2)
    for n in range(100):
        limit.admit(f"did:plc:{n}", T0)
    assert limit.tracked_authors == 100
    limit.admit("did:plc:late", T0 + timedelta(hours=2))
    assert limit.tracked_authors == 1


def test_limit_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="per_hour"):
        AuthorRateLimit(0)
    with pytest.raises(ValueError, match="window"):
        AuthorRateLimit(5, window=timedelta(0))


def test_filter_matches_handles_loosely_and_dids_exactly() -> None:
    only = AuthorFilter(allow=frozenset({"@Alice.Test", "did:plc:bob"}))
    assert only.allows("did:plc:alice", "alice.test")
    assert only.allows("did:plc:bob", "bob.renamed")
    assert not only.allows("did:plc:BOB", "someone.test")
    assert only.refusal("did:plc:carol", "carol.test") == "not on allow list"

    deny = AuthorFilter(deny=frozenset({"spam.test"}))
    assert deny.refusal("did:plc:spam", "SPAM.test") == "deny list"
    assert deny.allows("did:plc:alice", "alice.test")
    assert AuthorFilter(allow=frozenset()).refusal("did:plc:a", "a.test") == "not on allow list"


def test_deny_wins_over_allow() -> None:
    both = AuthorFilter(allow=frozenset({"alice.test"}), deny=frozenset({"did:plc:alice"}))
    assert both.refusal("did:plc:alice", "alice.test") == "deny list"


def test_filter_from_settings() -> None:
    settings = Settings(_env_file=None, allow_handles=[], deny_handles=["@Spam.test"])
    assert AuthorFilter.from_settings(settings) == AuthorFilter(deny=frozenset({"spam.test"}))
    allowing = Settings(_env_file=None, allow_handles="alice.test, did:plc:bob")
    assert AuthorFilter.from_settings(allowing).allow == frozenset({"alice.test", "did:plc:bob"})


def test_screen_drops_own_listed_and_over_limit_with_reasons() -> None:
    admission = Admission(
        self_did=PHI,
        author_filter=AuthorFilter(deny=frozenset({"troll.test"})),
        rate_limit=AuthorRateLimit(2),
    )
    batch = [
        notification("did:plc:alice", "alice.test", n=1),
        notification(PHI, "phi.test", n=2),
        notification("did:plc:troll", "troll.test", n=3),
        notification("did:plc:alice", "alice.test", n=4),
        notification("did:plc:alice", "alice.test", n=5),
        notification("did:plc:bob", "bob.test", n=6),
    ]
    admitted, dropped = admission.screen(batch, T0)
    assert admitted == [batch[0], batch[3], batch[5]]
    assert dropped == [
        Dropped(notification=batch[1], reason="own"),
        Dropped(notification=batch[2], reason="deny list"),
        Dropped(notification=batch[4], reason="rate limit: 2/hour from @alice.test"),
    ]
    # The troll's refused notification did not use up any of their allowance elsewhere,
    # and alice stays limited until the hour has passed.
    later, dropped_later = admission.screen([batch[4]], T0 + timedelta(minutes=30))
    assert (later, [d.reason for d in dropped_later]) == (
        [],
        ["rate limit: 2/hour from @alice.test"],
    )
    assert admission.screen([batch[4]], T0 + timedelta(hours=1)) == ([batch[4]], [])


def test_screen_with_allow_list_from_settings() -> None:
    settings = Settings(_env_file=None, allow_handles=["alice.test"], rate_limit_per_hour=1)
    admission = Admission.from_settings(settings, self_did=PHI)
    batch = [
        notification("did:plc:alice", "alice.test", n=1),
        notification("did:plc:bob", "bob.test", n=2),
        notification("did:plc:alice", "alice.test", n=3),
    ]
    admitted, dropped = admission.screen(batch, T0)
    assert admitted == [batch[0]]
    assert [(d.notification.uri, d.reason) for d in dropped] == [
        (batch[1].uri, "not on allow list"),
        (batch[2].uri, "rate limit: 1/hour from @alice.test"),
    ]


def test_an_event_screened_again_counts_once() -> None:
    # A batch whose build failed is screened again on the next tick: same notifications.
    screen = Admission(self_did=PHI, rate_limit=AuthorRateLimit(2))
    first = [notification("did:plc:a", "a.test", n=i) for i in range(2)]
    assert screen.screen(first, T0)[0] == first
    assert screen.screen(first, T0 + timedelta(minutes=1))[0] == first
    assert screen.rate_limit.count("did:plc:a", T0 + timedelta(minutes=1)) == 2
    (dropped,) = screen.screen([notification("did:plc:a", "a.test", n=2)], T0)[1]
    assert dropped.reason == "rate limit: 2/hour from @a.test"


def test_snapshot_and_restore_carry_the_window_to_a_new_limiter() -> None:
    before = AuthorRateLimit(2)
    assert before.admit("did:plc:a", T0, event="at://a/1")
    assert before.admit("did:plc:a", T0 + timedelta(minutes=5), event="at://a/2")
    after = AuthorRateLimit(2)
    after.restore(before.snapshot())
    after.restore(before.snapshot())  # restoring twice doubles nothing
    assert after.snapshot() == before.snapshot()
    assert after.admit("did:plc:a", T0 + timedelta(minutes=30), event="at://a/3") is False
    assert after.admit("did:plc:a", T0 + timedelta(minutes=30), event="at://a/2") is True
    assert after.admit("did:plc:a", T0 + timedelta(hours=1), event="at://a/4") is True


@pytest.mark.anyio
async def test_window_state_round_trips_through_memory(memory: Memory) -> None:
    state = WindowState(memory)
    assert await state.load() == {}
    limit = AuthorRateLimit(30)
    for minute in range(3):
        limit.admit("did:plc:a", T0 + timedelta(minutes=minute), event=f"at://a/{minute}")
    limit.admit("did:plc:b", T0)
    await state.save(limit.snapshot())
    assert await WindowState(memory).load() == limit.snapshot()
    entry = await memory.store.read_state(STATE_SCOPE, "authors")
    assert entry is not None and entry.version == 1


@pytest.mark.anyio
async def test_an_unreadable_window_starts_empty(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    await memory.store.write_state(STATE_SCOPE, "authors", "{not json", at=T0)
    assert await WindowState(memory).load() == {}
    assert "rate-limit window 'authors' unreadable" in caplog.text
