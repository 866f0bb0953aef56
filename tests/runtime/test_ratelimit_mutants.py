"""The rate limit's edges (`phi.runtime.ratelimit`): the window's exact end, the map of
authors swept once a window, the screen built from settings, and the window kept in memory
(two versions, an unreadable one named in the log)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from phi.atproto import Notification
from phi.config import Settings
from phi.memory import Memory
from phi.runtime.ratelimit import STATE_SCOPE, Admission, AuthorRateLimit, WindowState

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
PHI = "did:plc:phi"


def notification(did: str, handle: str, n: int) -> Notification:
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


def test_an_admission_stops_counting_exactly_one_window_later() -> None:
    limit = AuthorRateLimit(3)
    limit.admit("did:plc:a", T0)
    limit.admit("did:plc:a", T0 + timedelta(minutes=1))
    assert limit.count("did:plc:a", T0 + timedelta(minutes=59, seconds=59)) == 2
    assert limit.count("did:plc:a", T0 + timedelta(hours=1)) == 1
    assert limit.count("did:plc:a", T0 + timedelta(hours=1, minutes=1)) == 0
    assert limit.count("did:plc:nobody", T0) == 0


def test_quiet_authors_are_swept_once_a_window() -> None:
    limit = AuthorRateLimit(5)
    limit.admit("did:plc:a", T0)  # the first sweep is here
    limit.admit("did:plc:b", T0 + timedelta(minutes=10))
    # Exactly a window after the last sweep: swept again; a's admission has left the window.
    limit.admit("did:plc:c", T0 + timedelta(hours=1))
    assert limit.snapshot().keys() == {"did:plc:b", "did:plc:c"}
    # b leaves the window meanwhile, but the next sweep is a window after the last one:
    # until then b is still held ("the authors of the last window or two").
    limit.admit("did:plc:d", T0 + timedelta(hours=1, minutes=20))
    assert limit.tracked_authors == 3
    limit.admit("did:plc:e", T0 + timedelta(hours=2))
    assert limit.snapshot().keys() == {"did:plc:d", "did:plc:e"}


def test_the_screen_from_settings_drops_phis_own() -> None:
    admission = Admission.from_settings(Settings(_env_file=None), self_did=PHI)
    own = notification(PHI, "phi.test", 1)
    other = notification("did:plc:a", "a.test", 2)
    admitted, dropped = admission.screen([own, other], T0)
    assert admitted == [other]
    assert [(d.notification, d.reason) for d in dropped] == [(own, "own")]
    assert admission.rate_limit.describe() == "30/hour"


@pytest.mark.anyio
async def test_memory_keeps_the_last_two_versions_of_the_window(memory: Memory) -> None:
    state = WindowState(memory)
    limit = AuthorRateLimit(30)
    for n in range(4):
        limit.admit("did:plc:a", T0 + timedelta(minutes=n), event=f"at://a/{n}")
        await state.save(limit.snapshot())
    kept = await memory.store.state_history(STATE_SCOPE, "authors", limit=50)
    assert [e.version for e in kept] == [4, 3]
    assert await WindowState(memory).load() == limit.snapshot()


@pytest.mark.anyio
async def test_an_unreadable_window_is_named_in_the_log(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    await memory.state.write(STATE_SCOPE, "flood", "{not json")
    with caplog.at_level(logging.WARNING, logger="phi.runtime"):
        assert await WindowState(memory, key="flood").load() == {}
    assert [r.getMessage() for r in caplog.records] == [
        "rate-limit window 'flood' unreadable, starting empty: Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1)"
    ]
