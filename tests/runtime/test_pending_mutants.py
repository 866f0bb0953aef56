"""The pending queue's edges (`phi.runtime.pending`): the retry policy's bounds, what
`phi runs pending --json` shows of an entry, errors clipped at exactly their limit, and how
many versions of the queue memory keeps."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from phi.atproto import Notification
from phi.config import Settings
from phi.errors import InvalidInput
from phi.memory import Memory
from phi.runtime.pending import STATE_SCOPE, Backoff, PendingQueue, PendingStore

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def notification(n: int) -> Notification:
    return Notification(
        uri=f"at://did:plc:alice/app.bsky.feed.post/{n}",
        cid=f"cid{n}",
        reason="mention",
        author_did="did:plc:alice",
        author_handle="alice.test",
        text=f"post {n}",
        reason_subject=None,
        is_read=False,
        indexed_at=T0 + timedelta(seconds=n),
    )


@pytest.mark.parametrize(
    "refused",
    [
        {"base_seconds": 0},
        {"base_seconds": -1},
        {"max_seconds": 0},
        {"max_seconds": -0.5},
        {"attempts": 0},
    ],
    ids=["base-zero", "base-negative", "max-zero", "max-negative", "attempts-zero"],
)
def test_a_retry_policy_that_cannot_work_is_refused_in_one_line(
    refused: dict[str, float],
) -> None:
    policy = {"base_seconds": 30.0, "max_seconds": 1800.0, "attempts": 5} | refused
    with pytest.raises(InvalidInput) as error:
        Backoff(
            base_seconds=policy["base_seconds"],
            max_seconds=policy["max_seconds"],
            attempts=int(policy["attempts"]),
        )
    assert str(error.value) == (
        f"retry waits must be positive and attempts at least 1, got base "
        f"{policy['base_seconds']!r}, max {policy['max_seconds']!r}, "
        f"attempts {policy['attempts']!r}"
    )


def test_waits_under_a_second_are_allowed() -> None:
    quick = Backoff(base_seconds=0.25, max_seconds=0.5, attempts=1)
    assert [quick.wait(n) for n in (1, 2, 3)] == [
        timedelta(seconds=0.25),
        timedelta(seconds=0.5),
        timedelta(seconds=0.5),
    ]
    assert quick.wait(0) == timedelta(seconds=0.25)  # no failure yet counts as the first


def test_a_wait_too_long_for_the_clock_is_refused() -> None:
    # A wait past a year is never meant, and one past the calendar's end would crash the
    # tick that set it (OverflowError) before it marked anything seen.
    assert Backoff(base_seconds=60, max_seconds=365 * 86400).wait(99) == timedelta(days=365)
    with pytest.raises(InvalidInput) as error:
        Backoff(base_seconds=60, max_seconds=1e13)
    assert str(error.value) == (
        "the longest retry wait must be at most a year (31536000 seconds), got 10000000000000.0"
    )
    with pytest.raises(InvalidInput, match="at most a year"):
        Backoff.from_settings(Settings(_env_file=None, retry_max_seconds=1e20))


def test_waits_keep_doubling_up_to_the_longest_however_small_the_first() -> None:
    tiny = Backoff(base_seconds=1e-15, max_seconds=86400, attempts=500)
    assert tiny.wait(400) == timedelta(days=1)
    assert tiny.wait(1) == timedelta(0)  # below the clock's microsecond
    assert Backoff(base_seconds=1e300, max_seconds=60).wait(3) == timedelta(seconds=60)


def test_the_policy_comes_from_settings() -> None:
    settings = Settings(
        _env_file=None,
        retry_base_seconds=7,
        retry_max_seconds=99,
        retry_attempts=4,
    )
    assert Backoff.from_settings(settings) == Backoff(base_seconds=7, max_seconds=99, attempts=4)


def test_an_entry_as_phi_runs_pending_shows_it() -> None:
    a = notification(1)
    backoff = Backoff(base_seconds=30, max_seconds=100, attempts=2)
    first = PendingQueue(account="did:plc:phi").settle(
        [a], done=(), failure="ModelHTTPError: 529", now=T0, backoff=backoff
    )
    assert first.queue.summaries() == [
        {
            "account": "did:plc:phi",
            "status": "waiting",
            "uri": a.uri,
            "reason": "mention",
            "author_handle": "alice.test",
            "text": "post 1",
            "failures": 1,
            "first_failed_at": "2026-11-25T12:00:00+00:00",
            "last_failed_at": "2026-11-25T12:00:00+00:00",
            "retry_at": "2026-11-25T12:00:30+00:00",
            "error": "ModelHTTPError: 529",
        }
    ]
    later = T0 + timedelta(seconds=30)
    aside = first.queue.settle([a], done=(), failure="boom", now=later, backoff=backoff)
    (entry,) = aside.set_aside
    # Set aside on its last failure: when it first failed is still the first failure's time.
    assert entry.summary() | {"uri": "-"} == {
        "status": "set-aside",
        "uri": "-",
        "reason": "mention",
        "author_handle": "alice.test",
        "text": "post 1",
        "failures": 2,
        "first_failed_at": "2026-11-25T12:00:00+00:00",
        "last_failed_at": "2026-11-25T12:00:30+00:00",
        "retry_at": None,
        "error": "boom",
    }


@pytest.mark.parametrize(("length", "kept"), [(299, 299), (300, 300), (301, 300)])
def test_an_error_is_kept_whole_up_to_300_characters(length: int, kept: int) -> None:
    failure = "E" * length
    settled = PendingQueue(account="did:plc:phi").settle(
        [notification(1)], done=(), failure=failure, now=T0, backoff=Backoff()
    )
    (entry,) = settled.waiting
    assert len(entry.error) == kept
    assert entry.error == (failure if length <= 300 else "E" * 299 + "…")


@pytest.mark.anyio
async def test_memory_keeps_the_last_ten_versions_of_the_queue(memory: Memory) -> None:
    store = PendingStore(memory=memory, account="did:plc:phi")
    queue = PendingQueue(account="did:plc:phi")
    for n in range(12):
        queue = queue.settle(
            [notification(n)], done=(), failure="boom", now=T0, backoff=Backoff()
        ).queue
        await store.save(queue)
    kept = await memory.store.state_history(STATE_SCOPE, "did:plc:phi", limit=50)
    assert [e.version for e in kept] == list(range(12, 2, -1))
    assert await store.load() == queue


@pytest.mark.anyio
async def test_an_unreadable_queue_is_named_with_its_first_error(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    # Two things wrong (an entry without its fields, a status no queue has): the log names the
    # first, without pydantic's documentation link.
    broken = {"account": "did:plc:phi", "entries": [{"status": "lost"}]}
    await memory.state.write(STATE_SCOPE, "did:plc:phi", json.dumps(broken))
    with caplog.at_level(logging.WARNING, logger="phi.runtime"):
        loaded = await PendingStore(memory=memory, account="did:plc:phi").load()
    assert loaded == PendingQueue(account="did:plc:phi")
    (record,) = caplog.records
    message = record.getMessage()
    assert message.startswith(
        "pending notifications of did:plc:phi unreadable (version 1 kept), starting empty: "
        "[{'type': 'missing', 'loc': ('entries', 0, 'notification')"
    )
    assert message.count("'type'") == 1 and "errors.pydantic.dev" not in message
