"""Custom feeds, read through the AppView.

`app.bsky.feed.getFeed` asks the AppView for a feed by its generator record's AT-URI; the
AppView fetches the skeleton from the generator service the record's DID names and
hydrates the posts. `app.bsky.feed.getActorFeeds` lists the generator records an account
created. The feeds an account has *saved* are not readable by anyone else: they live in
`app.bsky.actor.getPreferences`, which its lexicon describes as the private preferences of
the current account, and the PDS answers it from the requester's own store only. So
"the owner's feeds" are the feeds the owner made.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from atproto_client import AsyncClient, models  # type: ignore[import-untyped]

from phi.atproto._session import Session
from phi.atproto.errors import InvalidArgument
from phi.atproto.models import Post

__all__ = ["FEED_COLLECTION", "FeedGenerator", "FeedMethods"]

FEED_COLLECTION: Final = "app.bsky.feed.generator"
"""The collection of feed generator records: a feed's URI points at one."""


@dataclass(frozen=True, kw_only=True)
class FeedGenerator:
    """A custom feed as the AppView describes it."""

    uri: str
    """The generator record's AT-URI: what `get_feed` takes."""
    did: str
    """The DID of the service that builds the feed."""
    creator_handle: str
    """Who made it."""
    display_name: str
    """Its name."""
    description: str
    """What it says it shows (may be empty)."""
    like_count: int = 0
    """Likes of the feed."""

    @classmethod
    def from_view(cls, view: models.AppBskyFeedDefs.GeneratorView) -> FeedGenerator:
        """Build from the SDK's `GeneratorView`."""
        return cls(
            uri=view.uri,
            did=view.did,
            creator_handle=view.creator.handle,
            display_name=view.display_name,
            description=view.description or "",
            like_count=view.like_count or 0,
        )


async def _feed_page(client: AsyncClient, *, params: Any) -> Any:
    return await client.app.bsky.feed.get_feed(params)


async def _actor_feeds_page(client: AsyncClient, *, params: Any) -> Any:
    return await client.app.bsky.feed.get_actor_feeds(params)


def check_feed_uri(uri: str) -> str:
    """`uri` when it names a feed generator record (`at://<did>/app.bsky.feed.generator/<rkey>`).

    Raises:
        InvalidArgument: It does not.
    """
    parts = uri.strip().removeprefix("at://").split("/")
    if not uri.strip().startswith("at://") or len(parts) != 3 or parts[1] != FEED_COLLECTION:
        raise InvalidArgument(
            f"{uri!r} is not a feed URI; a feed is at://<did>/{FEED_COLLECTION}/<name>"
        )
    return uri.strip()


class FeedMethods:
    """The feed half of `PhiClient` (a mixin: it needs `_session`)."""

    _session: Session

    async def get_feed(self, feed_uri: str, *, limit: int = 30) -> list[Post]:
        """The posts of the custom feed at `feed_uri`, in the feed's order (reposts appear as
        the original post, each post once).

        Raises:
            InvalidArgument: `feed_uri` is not a feed generator URI.
            NotFound, RequestRefused: The AppView does not know the feed, or its generator
                failed.
        """
        uri = check_feed_uri(feed_uri)
        posts: dict[str, Post] = {}
        cursor: str | None = None
        while len(posts) < limit:
            params = models.AppBskyFeedGetFeed.Params(
                feed=uri, limit=max(1, min(100, limit - len(posts))), cursor=cursor
            )
            page = await self._session.request(
                partial(_feed_page, params=params), what=f"getFeed {uri}"
            )
            for item in page.feed:
                posts.setdefault(item.post.uri, Post.from_view(item.post))
            cursor = page.cursor
            if not cursor or not page.feed:
                break
        return list(posts.values())[:limit]

    async def get_actor_feeds(self, actor: str, *, limit: int = 50) -> list[FeedGenerator]:
        """The custom feeds `actor` (handle or DID) created, newest first."""
        params = models.AppBskyFeedGetActorFeeds.Params(actor=actor, limit=max(1, min(limit, 100)))
        page = await self._session.request(
            partial(_actor_feeds_page, params=params), what=f"getActorFeeds {actor!r}"
        )
        return [FeedGenerator.from_view(view) for view in page.feeds]
