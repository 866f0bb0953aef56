"""Reading phi's unread notifications: every page back to the last one seen, within a bound.

`listNotifications` answers newest first, a page at a time; after a pause or an outage the
unread ones can fill many pages, and reading only the first would lose the rest once they
are marked seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from phi.atproto import Notification, PhiClient
from phi.errors import InvalidInput

__all__ = ["Unread", "read_unread"]


@dataclass(frozen=True, kw_only=True)
class Unread:
    """The unread notifications one tick read."""

    notifications: list[Notification]
    """Oldest first (so the rate limit drops an author's latest)."""
    pages: int
    """`listNotifications` requests made."""
    truncated: bool
    """The bound was hit with more possibly unread: older ones were not read."""


async def read_unread(client: PhiClient, *, page_size: int = 50, max_pages: int = 20) -> Unread:
    """Unread notifications, paging back until a read one, the end, or `max_pages` pages.

    Raises:
        InvalidInput: `page_size` or `max_pages` is below 1.
        AtprotoError: A page could not be read.
    """
    if page_size < 1 or max_pages < 1:
        raise InvalidInput(
            f"page_size and max_pages must be at least 1, got {page_size!r} and {max_pages!r}"
        )
    unread: list[Notification] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await client.list_notifications(limit=page_size, cursor=cursor)
        pages += 1
        fresh = [n for n in page.notifications if not n.is_read]
        unread.extend(fresh)
        # Newest first: a read one means everything older was read too.
        done = not fresh or len(fresh) < len(page.notifications) or not page.cursor
        if done or pages == max_pages:
            truncated = not done
            break
        cursor = page.cursor
    return Unread(
        notifications=sorted(unread, key=lambda n: n.indexed_at), pages=pages, truncated=truncated
    )
