"""Unread paging (`phi.runtime.unread`) against a feed served a page at a time: every page
back to the first read notification, the end of the feed, or the bound, and which of those
stopped it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from tests.runtime._feed import START, FeedClient, as_client, mention

from phi.errors import InvalidInput
from phi.runtime.unread import Unread, read_unread

pytestmark = pytest.mark.anyio


def feed(count: int, *, seen_after: int | None = None) -> FeedClient:
    """`count` notifications 1..count; those up to `seen_after` already seen."""
    client = FeedClient(feed=[mention(n) for n in range(1, count + 1)])
    if seen_after is not None:
        client.seen_at = START + timedelta(seconds=seen_after, milliseconds=1)
    return client


async def test_a_backlog_is_read_page_by_page_to_the_end_oldest_first() -> None:
    client = feed(5)
    read = await read_unread(as_client(client), page_size=2, max_pages=5)
    assert read == Unread(notifications=[mention(n) for n in range(1, 6)], pages=3, truncated=False)
    assert client.requests == [(2, None), (2, "2"), (2, "4")]


async def test_paging_stops_at_the_first_read_notification() -> None:
    # Newest first: 6, 5 | 4, 3(read) — the read one ends it, older pages are not asked for.
    client = feed(6, seen_after=3)
    read = await read_unread(as_client(client), page_size=2, max_pages=5)
    assert [n.uri for n in read.notifications] == [mention(n).uri for n in (4, 5, 6)]
    assert (read.pages, read.truncated) == (2, False)
    assert len(client.requests) == 2


async def test_a_full_page_of_unread_then_a_read_page_stops_there() -> None:
    client = feed(4, seen_after=2)
    read = await read_unread(as_client(client), page_size=2, max_pages=5)
    assert [n.uri for n in read.notifications] == [mention(3).uri, mention(4).uri]
    assert (read.pages, read.truncated) == (2, False)


async def test_nothing_unread_is_one_request() -> None:
    client = feed(3, seen_after=3)
    assert await read_unread(as_client(client), page_size=2, max_pages=5) == Unread(
        notifications=[], pages=1, truncated=False
    )


async def test_the_bound_stops_paging_and_says_more_may_be_unread() -> None:
    client = feed(5)
    read = await read_unread(as_client(client), page_size=2, max_pages=2)
    # The newest four; the oldest is past the bound.
    assert [n.uri for n in read.notifications] == [mention(n).uri for n in (2, 3, 4, 5)]
    assert (read.pages, read.truncated) == (2, True)
    assert await read_unread(as_client(feed(3)), page_size=1, max_pages=1) == Unread(
        notifications=[mention(3)], pages=1, truncated=True
    )


async def test_reaching_the_bound_on_the_last_page_is_not_truncation() -> None:
    # The bound and the end of the feed fall on the same page: nothing older is left.
    read = await read_unread(as_client(feed(4)), page_size=2, max_pages=2)
    assert (len(read.notifications), read.pages, read.truncated) == (4, 2, False)
    # ... and so does a read one on the bound's page.
    read = await read_unread(as_client(feed(6, seen_after=1)), page_size=2, max_pages=3)
    assert (len(read.notifications), read.pages, read.truncated) == (5, 3, False)


async def test_the_defaults_are_pages_of_50_and_20_pages() -> None:
    client = feed(3)
    await read_unread(as_client(client))
    assert client.requests == [(50, None)]
    big = feed(1050)
    read = await read_unread(as_client(big))
    assert (len(read.notifications), read.pages, read.truncated) == (1000, 20, True)


@pytest.mark.parametrize(
    ("page_size", "max_pages"), [(0, 1), (1, 0), (-5, 20)], ids=["page", "pages", "negative"]
)
async def test_a_bound_below_one_is_refused_in_one_line(page_size: int, max_pages: int) -> None:
    client = feed(2)
    with pytest.raises(InvalidInput) as refused:
        await read_unread(as_client(client), page_size=page_size, max_pages=max_pages)
    assert str(refused.value) == (
        f"page_size and max_pages must be at least 1, got {page_size!r} and {max_pages!r}"
    )
    assert client.requests == []
