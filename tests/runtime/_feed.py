"""A stand-in for `PhiClient` in the poller's unit tests: phi's notifications as the AppView
serves them (newest first, a page at a time, `isRead` meaning `seenAt > indexedAt`), and what
phi wrote back in lists. The network tests (`test_poller_failures.py`,
`tests/agent/test_poller_reliability.py`) run the same paths against the real network; this
one makes the poller's own logic fast enough to mutate."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import cast

from tests.agent._network import PHI
from tests.agent._quiet import QuietClient

from phi.atproto import (
    AtprotoError,
    NotFound,
    Notification,
    NotificationPage,
    PhiClient,
    Post,
    PostRef,
    RecordRef,
    Thread,
)

START = datetime.fromisoformat("2026-11-25T12:00:00+00:00")
"""When the tests' notifications start arriving."""


def mention(
    n: int,
    *,
    handle: str = "alice.test",
    did: str | None = None,
    at: datetime | None = None,
    reason: str = "mention",
) -> Notification:
    """Notification `n` (its post `n`) from `handle`, indexed `n` seconds after `START`."""
    author = did or f"did:plc:{handle.split('.')[0]}"
    return Notification(
        uri=f"at://{author}/app.bsky.feed.post/{n}",
        cid=f"cid{n}",
        reason=reason,
        author_did=author,
        author_handle=handle,
        text=f"@phi.test question {n}" if reason in ("mention", "reply", "quote") else "",
        reason_subject=f"at://{PHI.did}/app.bsky.feed.post/own{n}" if reason == "like" else None,
        is_read=False,
        indexed_at=at or START + timedelta(seconds=n),
    )


@dataclass
class FeedClient(QuietClient):
    """`feed` holds every notification phi has (any order); `seen_at` is the server's mark."""

    feed: list[Notification] = field(default_factory=list)
    seen_at: datetime | None = None
    seen_calls: list[datetime | None] = field(default_factory=list)
    """Every `update_seen` argument, in order."""
    requests: list[tuple[int, str | None]] = field(default_factory=list)
    """(limit, cursor) of every `listNotifications` request."""
    deleted: set[str] = field(default_factory=set)
    """Post URIs whose thread is gone (`NotFound`)."""
    unreachable: set[str] = field(default_factory=set)
    """Post URIs whose thread fails with another network error."""
    replies: list[tuple[str, str]] = field(default_factory=list)
    """(text, replied-to URI) of each reply."""
    liked: list[str] = field(default_factory=list)
    reposted: list[str] = field(default_factory=list)
    own_posts: list[Post] = field(default_factory=list)
    """What `list_own_posts` returns, newest first."""
    own_asked: list[int] = field(default_factory=list)
    """The `limit` of every `list_own_posts` request."""

    async def list_notifications(
        self, *, limit: int = 50, cursor: str | None = None
    ) -> NotificationPage:
        self.requests.append((limit, cursor))
        ordered = sorted(self.feed, key=lambda n: n.indexed_at, reverse=True)
        start = int(cursor or 0)
        page = ordered[start : start + limit]
        seen = self.seen_at
        shown = [
            _with_read(n, seen is not None and seen > n.indexed_at) for n in page
        ]  # the AppView's `isRead`
        more = start + limit < len(ordered)
        return NotificationPage(
            notifications=shown, cursor=str(start + limit) if more else None, seen_at=seen
        )

    async def update_seen(self, seen_at: datetime | None = None) -> None:
        self.seen_calls.append(seen_at)
        self.seen_at = seen_at

    def unread(self) -> list[str]:
        """URIs the server would list as unread now, oldest first."""
        seen = self.seen_at
        return [
            n.uri
            for n in sorted(self.feed, key=lambda n: n.indexed_at)
            if seen is None or seen <= n.indexed_at
        ]

    async def get_thread(self, uri: str, *, depth: int = 100, parent_height: int = 100) -> Thread:
        if uri in self.deleted:
            raise NotFound(f"post {uri!r}")
        if uri in self.unreachable:
            raise AtprotoError(f"getPostThread {uri}: the AppView did not answer")
        n = next(n for n in self.feed if n.uri == uri)
        post = Post(
            uri=n.uri,
            cid=n.cid,
            author_did=n.author_did,
            author_handle=n.author_handle,
            text=n.text,
            created_at=n.indexed_at,
        )
        return Thread(focus=uri, posts=[post])

    async def get_post(self, uri: str) -> Post:
        return Post(
            uri=uri,
            cid="cid-own",
            author_did=PHI.did,
            author_handle=PHI.handle,
            text="a post of phi's",
            created_at=START,
        )

    async def get_author_feed(self, actor: str, *, limit: int = 30) -> list[Post]:
        return []

    async def list_own_posts(self, *, limit: int = 50) -> list[Post]:
        self.own_asked.append(limit)
        return self.own_posts[:limit]

    async def reply(
        self, text: str, *, to: PostRef | str, langs: list[str] | None = None
    ) -> list[PostRef]:
        target = to if isinstance(to, str) else to.uri
        self.replies.append((text, target))
        return [PostRef(uri=f"at://{PHI.did}/app.bsky.feed.post/r{len(self.replies)}", cid="c")]

    async def like(self, target: PostRef | str) -> RecordRef:
        uri = target if isinstance(target, str) else target.uri
        self.liked.append(uri)
        return RecordRef(uri=f"at://{PHI.did}/app.bsky.feed.like/{len(self.liked)}", cid="c")

    async def repost(self, target: PostRef | str) -> RecordRef:
        uri = target if isinstance(target, str) else target.uri
        self.reposted.append(uri)
        return RecordRef(uri=f"at://{PHI.did}/app.bsky.feed.repost/{len(self.reposted)}", cid="c")


def as_client(feed: FeedClient) -> PhiClient:
    """The double where a `PhiClient` is expected (it has what these paths call)."""
    return cast(PhiClient, feed)


def _with_read(n: Notification, is_read: bool) -> Notification:
    return replace(n, is_read=is_read)
