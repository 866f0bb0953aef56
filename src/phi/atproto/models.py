"""The values `PhiClient` returns: small frozen dataclasses, independent of the SDK's models.

The agent and the memory engine see these, never the SDK's generated classes, so a change
of SDK touches `phi.atproto` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from atproto_client import models  # type: ignore[import-untyped]

from phi.atproto.text import Facet

__all__ = ["Identity", "Notification", "Post", "PostRef", "Profile", "RecordRef", "Thread"]


def _parse_time(value: str | None) -> datetime:
    if not value:
        return datetime.fromtimestamp(0, tz=UTC)
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Who the client is logged in as."""

    did: str
    """The account's DID."""
    handle: str
    """The account's handle."""


@dataclass(frozen=True, kw_only=True)
class PostRef:
    """A strong reference to a record: its AT-URI and the CID of the exact version."""

    uri: str
    """`at://did/collection/rkey`."""
    cid: str
    """Content hash of the record version."""

    def to_sdk(self) -> models.ComAtprotoRepoStrongRef.Main:
        """This reference as the SDK's `com.atproto.repo.strongRef`."""
        return models.ComAtprotoRepoStrongRef.Main(uri=self.uri, cid=self.cid)


@dataclass(frozen=True, kw_only=True)
class RecordRef:
    """Where a record was written."""

    uri: str
    """The record's AT-URI."""
    cid: str
    """Content hash of the written version."""

    @property
    def rkey(self) -> str:
        """The record key, last segment of the URI."""
        return self.uri.rsplit("/", 1)[-1]


def _facets(raw: list[Any] | None) -> list[Facet]:
    found: list[Facet] = []
    for facet in raw or []:
        start, end = facet.index.byte_start, facet.index.byte_end
        for feature in facet.features:
            if isinstance(feature, models.AppBskyRichtextFacet.Mention):
                found.append(
                    Facet(kind="mention", byte_start=start, byte_end=end, value=feature.did)
                )
            elif isinstance(feature, models.AppBskyRichtextFacet.Link):
                found.append(Facet(kind="link", byte_start=start, byte_end=end, value=feature.uri))
            elif isinstance(feature, models.AppBskyRichtextFacet.Tag):
                found.append(Facet(kind="tag", byte_start=start, byte_end=end, value=feature.tag))
    return found


def _reply_refs(record: Any) -> tuple[PostRef | None, PostRef | None]:
    reply = getattr(record, "reply", None)
    if reply is None:
        return None, None
    return PostRef(uri=reply.root.uri, cid=reply.root.cid), PostRef(
        uri=reply.parent.uri, cid=reply.parent.cid
    )


@dataclass(frozen=True, kw_only=True)
class Post:
    """One post as the AppView shows it."""

    uri: str
    """The post's AT-URI."""
    cid: str
    """The post's CID."""
    author_did: str
    """DID of the author."""
    author_handle: str
    """Handle of the author."""
    text: str
    """The text."""
    created_at: datetime
    """When the author says it was written (UTC)."""
    reply_root: PostRef | None = None
    """The thread's first post, when this is a reply."""
    reply_parent: PostRef | None = None
    """The post this replies to, when it is a reply."""
    like_count: int = 0
    """Likes seen by the AppView."""
    reply_count: int = 0
    """Replies seen by the AppView."""
    facets: list[Facet] = field(default_factory=list)
    """Mentions, links and hashtags in `text` (UTF-8 byte offsets)."""

    @property
    def ref(self) -> PostRef:
        """A strong reference to this post."""
        return PostRef(uri=self.uri, cid=self.cid)

    @classmethod
    def from_view(cls, view: models.AppBskyFeedDefs.PostView) -> Post:
        """Build from the SDK's `PostView`."""
        record = view.record
        root, parent = _reply_refs(record)
        return cls(
            uri=view.uri,
            cid=view.cid,
            author_did=view.author.did,
            author_handle=view.author.handle,
            text=getattr(record, "text", "") or "",
            created_at=_parse_time(getattr(record, "created_at", None) or view.indexed_at),
            reply_root=root,
            reply_parent=parent,
            like_count=view.like_count or 0,
            reply_count=view.reply_count or 0,
            facets=_facets(getattr(record, "facets", None)),
        )


@dataclass(frozen=True, kw_only=True)
class Notification:
    """One entry of `app.bsky.notification.listNotifications`."""

    uri: str
    """The record that caused it (the reply, the like, the follow...)."""
    cid: str
    """Its CID."""
    reason: str
    """`mention`, `reply`, `like`, `repost`, `follow`, `quote`, ..."""
    author_did: str
    """Who did it."""
    author_handle: str
    """Their handle."""
    text: str
    """The post text for mentions, replies and quotes; empty otherwise."""
    reason_subject: str | None
    """What was liked or reposted (phi's post), when relevant."""
    is_read: bool
    """Whether it was seen (`updateSeen`) before."""
    indexed_at: datetime
    """When the AppView indexed it."""
    reply_root: PostRef | None = None
    """For replies: the thread's first post."""
    reply_parent: PostRef | None = None
    """For replies: the post replied to."""

    @property
    def ref(self) -> PostRef:
        """A strong reference to the record that caused the notification."""
        return PostRef(uri=self.uri, cid=self.cid)

    @classmethod
    def from_sdk(cls, n: models.AppBskyNotificationListNotifications.Notification) -> Notification:
        """Build from the SDK's notification view."""
        root, parent = _reply_refs(n.record)
        return cls(
            uri=n.uri,
            cid=n.cid,
            reason=n.reason,
            author_did=n.author.did,
            author_handle=n.author.handle,
            text=getattr(n.record, "text", "") or "",
            reason_subject=n.reason_subject,
            is_read=n.is_read,
            indexed_at=_parse_time(n.indexed_at),
            reply_root=root,
            reply_parent=parent,
        )


@dataclass(frozen=True, kw_only=True)
class Profile:
    """An account's public profile."""

    did: str
    """The account's DID."""
    handle: str
    """The handle."""
    display_name: str | None = None
    """The display name, if set."""
    description: str | None = None
    """The bio, if set."""
    followers_count: int = 0
    """Followers."""
    follows_count: int = 0
    """Accounts followed."""
    posts_count: int = 0
    """Posts."""

    @classmethod
    def from_sdk(cls, p: models.AppBskyActorDefs.ProfileViewDetailed) -> Profile:
        """Build from the SDK's detailed profile view."""
        return cls(
            did=p.did,
            handle=p.handle,
            display_name=p.display_name,
            description=p.description,
            followers_count=p.followers_count or 0,
            follows_count=p.follows_count or 0,
            posts_count=p.posts_count or 0,
        )


@dataclass(frozen=True, kw_only=True)
class Thread:
    """A thread around one post: its ancestors, the post and its replies, oldest first."""

    focus: str
    """AT-URI of the post the thread was asked for."""
    posts: list[Post] = field(default_factory=list)
    """Every visible post of the thread, in chronological order."""

    def render(self) -> str:
        """The thread as phi reads it: one `@handle: text` line per post, oldest first."""
        return "\n".join(f"@{p.author_handle}: {p.text}" for p in self.posts)
