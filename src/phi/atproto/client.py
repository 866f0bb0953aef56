"""`PhiClient`: everything phi does on the AT Protocol network, async.

Reads go through the PDS, which proxies `app.bsky.*` to the AppView; writes go to phi's own
repo. Posting handles what people notice: long text becomes a self-thread split at 300
graphemes, links and hashtags get facets with UTF-8 byte offsets, and `@mentions` are tagged
only for handles on the consent list (the owner, phi itself, the person replied to, and the
`mentionConsent` records); any other `@handle` stays plain text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from types import TracebackType
from typing import Any, Self

import httpx
from atproto_client import AsyncClient, models  # type: ignore[import-untyped]

from phi.atproto._repo import RecordMethods
from phi.atproto._session import ClientConfig, Session
from phi.atproto.errors import InvalidArgument, NotFound
from phi.atproto.feeds import FeedMethods
from phi.atproto.identity import IdentityMethods
from phi.atproto.labels import SelfLabelMethods
from phi.atproto.lexicon import Lexicons
from phi.atproto.models import Identity, Notification, Post, PostRef, Profile, RecordRef, Thread
from phi.atproto.records import MentionConsent
from phi.atproto.text import find_facets, mentioned_handles, split_text

__all__ = ["NotificationPage", "PhiClient"]


@dataclass(frozen=True, kw_only=True)
class NotificationPage:
    """One page of notifications."""

    notifications: list[Notification]
    """Newest first."""
    cursor: str | None
    """Pass to `list_notifications` for the next (older) page."""
    seen_at: datetime | None
    """When `update_seen` was last called, as the server knows it."""


async def _get_posts(client: AsyncClient, *, uris: list[str]) -> Any:
    return await client.get_posts(uris)


async def _create_post(client: AsyncClient, *, repo: str, record: Any) -> Any:
    return await client.app.bsky.feed.post.create(repo, record)


async def _timeline_page(client: AsyncClient, *, params: Any) -> Any:
    return await client.app.bsky.feed.get_timeline(params)


async def _author_feed_page(client: AsyncClient, *, params: Any) -> Any:
    return await client.app.bsky.feed.get_author_feed(params)


async def _likes_page(client: AsyncClient, *, params: Any) -> Any:
    return await client.app.bsky.feed.get_likes(params)


def _page_size(limit: int, have: int) -> int:
    return max(1, min(100, limit - have))


def _flatten(node: object, out: list[Post]) -> None:
    """Collect the posts of a thread view: the node, its replies, recursively."""
    if not isinstance(node, models.AppBskyFeedDefs.ThreadViewPost):
        return  # a NotFoundPost or BlockedPost has no text to show
    out.append(Post.from_view(node.post))
    for reply in node.replies or []:
        _flatten(reply, out)


class PhiClient(RecordMethods, SelfLabelMethods, FeedMethods, IdentityMethods):
    """An async client for phi's account, opened as a context manager.

    Example:
        ```python
        async with PhiClient(ClientConfig.from_settings(settings)) as client:
            page = await client.list_notifications()
            await client.reply("hello!", to=page.notifications[0].ref)
        ```
    """

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self._session = Session(config)
        self.lexicons = Lexicons(config.nsid_prefix)
        self._plc_url = config.plc_url

    async def __aenter__(self) -> Self:
        # Other hosts (the PLC directory, another account's PDS) are read without phi's
        # session: what they serve is public, and phi's token is for its own PDS only.
        self._http = httpx.AsyncClient(timeout=10)
        try:
            await self._session.open()
        except BaseException:
            await self._session.close()
            await self._http.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._session.close()
        await self._http.aclose()

    @property
    def me(self) -> Identity:
        """The logged-in account."""
        return self._session.identity

    # --- reads -----------------------------------------------------------------------

    async def list_notifications(
        self, *, limit: int = 50, cursor: str | None = None
    ) -> NotificationPage:
        """phi's notifications, newest first.

        To mark them seen without losing any that arrive meanwhile, note the time before
        fetching and pass it to `update_seen`.
        """
        params = models.AppBskyNotificationListNotifications.Params(limit=limit, cursor=cursor)
        response = await self._session.request(
            lambda c: c.app.bsky.notification.list_notifications(params), what="listNotifications"
        )
        seen = (
            datetime.fromisoformat(response.seen_at.replace("Z", "+00:00"))
            if response.seen_at
            else None
        )
        return NotificationPage(
            notifications=[Notification.from_sdk(n) for n in response.notifications],
            cursor=response.cursor,
            seen_at=seen,
        )

    async def update_seen(self, seen_at: datetime | None = None) -> None:
        """Mark every notification up to `seen_at` (default: now) as read."""
        when = seen_at.isoformat() if seen_at else self._session.sdk.get_current_time_iso()
        data = models.AppBskyNotificationUpdateSeen.Data(seen_at=when)
        await self._session.request(
            lambda c: c.app.bsky.notification.update_seen(data), what="updateSeen"
        )

    async def get_posts(self, uris: list[str]) -> list[Post]:
        """The posts at `uris` that exist, in the AppView's order (25 per request)."""
        posts: list[Post] = []
        for start in range(0, len(uris), 25):
            batch = uris[start : start + 25]
            response = await self._session.request(partial(_get_posts, uris=batch), what="getPosts")
            posts.extend(Post.from_view(view) for view in response.posts)
        return posts

    async def get_post(self, uri: str) -> Post:
        """One post.

        Raises:
            NotFound: No post at `uri` (deleted, or not indexed yet).
        """
        posts = await self.get_posts([uri])
        if not posts:
            raise NotFound(f"post {uri!r}")
        return posts[0]

    async def get_thread(self, uri: str, *, depth: int = 100, parent_height: int = 100) -> Thread:
        """The thread around `uri`: ancestors, the post and its replies, oldest first.

        `Thread.render()` gives the `@handle: text` context phi reads before replying.
        """
        response = await self._session.request(
            lambda c: c.get_post_thread(
                uri, depth=min(depth, 1000), parent_height=min(parent_height, 1000)
            ),
            what=f"getPostThread {uri}",
        )
        posts: list[Post] = []
        node = response.thread
        _flatten(node, posts)
        parent = getattr(node, "parent", None)
        while isinstance(parent, models.AppBskyFeedDefs.ThreadViewPost):
            posts.append(Post.from_view(parent.post))
            parent = parent.parent
        posts.sort(key=lambda p: (p.created_at, p.uri))
        return Thread(focus=uri, posts=posts)

    async def get_timeline(self, *, limit: int = 30) -> list[Post]:
        """phi's home timeline (posts of the accounts it follows, and its own), newest first.

        A repost appears as the original post; each post appears once.
        """
        posts: dict[str, Post] = {}
        cursor: str | None = None
        while len(posts) < limit:
            params = models.AppBskyFeedGetTimeline.Params(
                limit=_page_size(limit, len(posts)), cursor=cursor
            )
            page = await self._session.request(
                partial(_timeline_page, params=params), what="getTimeline"
            )
            for item in page.feed:
                posts.setdefault(item.post.uri, Post.from_view(item.post))
            cursor = page.cursor
            if not cursor or not page.feed:
                break
        return list(posts.values())[:limit]

    async def list_own_posts(self, *, limit: int = 50) -> list[Post]:
        """phi's own posts and replies, newest first; its reposts of others are left out."""
        me = self.me.did
        posts: dict[str, Post] = {}
        cursor: str | None = None
        while len(posts) < limit:
            params = models.AppBskyFeedGetAuthorFeed.Params(
                actor=me,
                filter="posts_with_replies",
                limit=_page_size(limit, len(posts)),
                cursor=cursor,
            )
            page = await self._session.request(
                partial(_author_feed_page, params=params),
                what=f"getAuthorFeed {me!r}",
            )
            for item in page.feed:
                if item.reason is None and item.post.author.did == me:
                    posts.setdefault(item.post.uri, Post.from_view(item.post))
            cursor = page.cursor
            if not cursor or not page.feed:
                break
        return list(posts.values())[:limit]

    async def get_post_likers(self, uri: str, *, limit: int = 100) -> list[Identity]:
        """Who liked the post at `uri`, most recent like first (up to `limit` accounts)."""
        likers: list[Identity] = []
        cursor: str | None = None
        while len(likers) < limit:
            params = models.AppBskyFeedGetLikes.Params(
                uri=uri, limit=_page_size(limit, len(likers)), cursor=cursor
            )
            page = await self._session.request(
                partial(_likes_page, params=params), what=f"getLikes {uri}"
            )
            likers.extend(
                Identity(did=like.actor.did, handle=like.actor.handle) for like in page.likes
            )
            cursor = page.cursor
            if not cursor or not page.likes:
                break
        return likers[:limit]

    async def get_author_feed(self, actor: str, *, limit: int = 30) -> list[Post]:
        """Recent posts by `actor` (handle or DID), newest first."""
        response = await self._session.request(
            lambda c: c.get_author_feed(actor, limit=limit), what=f"getAuthorFeed {actor!r}"
        )
        return [Post.from_view(item.post) for item in response.feed]

    async def get_profile(self, actor: str) -> Profile:
        """The public profile of `actor` (handle or DID)."""
        response = await self._session.request(
            lambda c: c.get_profile(actor), what=f"profile {actor!r}"
        )
        return Profile.from_sdk(response)

    async def resolve_handle(self, handle: str) -> str:
        """The DID behind `handle`.

        Raises:
            NotFound: No account has this handle.
        """
        handle = handle.removeprefix("@").lower()
        response = await self._session.request(
            lambda c: c.resolve_handle(handle), what=f"handle {handle!r}"
        )
        return str(response.did)

    async def search_posts(self, query: str, *, limit: int = 25) -> list[Post]:
        """Posts matching `query`, where the AppView offers search.

        Raises:
            MethodNotSupported: This AppView has no search.
        """
        params = models.AppBskyFeedSearchPosts.Params(q=query, limit=limit)
        response = await self._session.request(
            lambda c: c.app.bsky.feed.search_posts(params), what="app.bsky.feed.searchPosts"
        )
        return [Post.from_view(view) for view in response.posts]

    # --- writes ----------------------------------------------------------------------

    async def consented_handles(self) -> set[str]:
        """Handles phi may always tag: itself, its owner and the `mentionConsent` records."""
        allowed = {self.me.handle.lower()}
        if self.config.owner_handle:
            allowed.add(self.config.owner_handle.removeprefix("@").lower())
        for stored in await self.list_records(MentionConsent, limit=1000):
            allowed.add(stored.value.handle.lower())
        return allowed

    async def _mention_dids(self, text: str, *, replying_to: str | None) -> dict[str, str]:
        handles = mentioned_handles(text)
        if not handles:
            return {}
        if self.config.mention_policy == "anyone":
            allowed = set(handles)
        else:
            allowed = await self.consented_handles()
        if replying_to:
            allowed.add(replying_to.lower())
        dids: dict[str, str] = {}
        for handle in handles:
            if handle in allowed:
                try:
                    dids[handle] = await self.resolve_handle(handle)
                except NotFound:
                    continue  # a handle that does not resolve stays plain text
        return dids

    async def _reply_target(self, to: PostRef | str) -> tuple[PostRef, PostRef, str]:
        """Root, parent and parent author's handle for a reply to `to`."""
        uri = to.uri if isinstance(to, PostRef) else to
        parent = await self.get_post(uri)
        root = parent.reply_root or parent.ref
        return root, parent.ref, parent.author_handle

    async def post(
        self, text: str, *, reply_to: PostRef | str | None = None, langs: list[str] | None = None
    ) -> list[PostRef]:
        """Post `text`, as a self-thread when it is longer than one post.

        Args:
            text: The text; split at 300 graphemes on paragraph, sentence or word breaks.
            reply_to: The post to reply to; the first chunk replies to it, the others to the
                chunk before, all under the same thread root.
            langs: Language tags of the text (e.g. `["en"]`).

        Returns:
            References to the posts written, in order.

        Raises:
            InvalidArgument: The text is empty.
            NotFound: `reply_to` does not exist (or is not indexed yet).
        """
        chunks = split_text(text)
        if not chunks:
            raise InvalidArgument("a post needs some text; got only whitespace")
        root: PostRef | None = None
        parent: PostRef | None = None
        replying_to: str | None = None
        if reply_to is not None:
            root, parent, replying_to = await self._reply_target(reply_to)
        mention_dids = await self._mention_dids(text, replying_to=replying_to)
        written: list[PostRef] = []
        for chunk in chunks:
            facets = [f.to_sdk() for f in find_facets(chunk, mention_dids=mention_dids)]
            reply = (
                models.AppBskyFeedPost.ReplyRef(root=root.to_sdk(), parent=parent.to_sdk())
                if root is not None and parent is not None
                else None
            )
            record = models.AppBskyFeedPost.Record(
                text=chunk,
                created_at=self._session.sdk.get_current_time_iso(),
                facets=facets or None,
                reply=reply,
                langs=langs,
            )
            response = await self._session.request(
                partial(_create_post, repo=self.me.did, record=record), what="post"
            )
            ref = PostRef(uri=response.uri, cid=response.cid)
            written.append(ref)
            root = root or ref
            parent = ref
        return written

    async def reply(
        self, text: str, *, to: PostRef | str, langs: list[str] | None = None
    ) -> list[PostRef]:
        """Reply to `to` with `text` (a self-thread under it when long); see `post`."""
        return await self.post(text, reply_to=to, langs=langs)

    async def _strong_ref(self, target: PostRef | str) -> PostRef:
        return target if isinstance(target, PostRef) else (await self.get_post(target)).ref

    async def like(self, target: PostRef | str) -> RecordRef:
        """Like a post (by reference, or by URI, looked up for its CID)."""
        subject = await self._strong_ref(target)
        record = models.AppBskyFeedLike.Record(
            subject=subject.to_sdk(), created_at=self._session.sdk.get_current_time_iso()
        )
        response = await self._session.request(
            lambda c: c.app.bsky.feed.like.create(self.me.did, record), what=f"like {subject.uri}"
        )
        return RecordRef(uri=response.uri, cid=response.cid)

    async def repost(self, target: PostRef | str) -> RecordRef:
        """Repost a post (by reference, or by URI)."""
        subject = await self._strong_ref(target)
        record = models.AppBskyFeedRepost.Record(
            subject=subject.to_sdk(), created_at=self._session.sdk.get_current_time_iso()
        )
        response = await self._session.request(
            lambda c: c.app.bsky.feed.repost.create(self.me.did, record),
            what=f"repost {subject.uri}",
        )
        return RecordRef(uri=response.uri, cid=response.cid)

    async def follow(self, actor: str) -> RecordRef:
        """Follow `actor` (a handle or a DID)."""
        did = actor if actor.startswith("did:") else await self.resolve_handle(actor)
        record = models.AppBskyGraphFollow.Record(
            subject=did, created_at=self._session.sdk.get_current_time_iso()
        )
        response = await self._session.request(
            lambda c: c.app.bsky.graph.follow.create(self.me.did, record), what=f"follow {actor!r}"
        )
        return RecordRef(uri=response.uri, cid=response.cid)
