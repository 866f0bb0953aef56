"""The values `PhiClient` returns: small frozen dataclasses, independent of the SDK's models.

The agent and the memory engine see these, never the SDK's generated classes, so a change
of SDK touches `phi.atproto` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, assert_never

from atproto_client import models  # type: ignore[import-untyped]

from phi.atproto._images import ImageRef, record_images, view_image_urls
from phi.atproto.text import Facet

__all__ = [
    "Embed",
    "EmbedKind",
    "EmbedLink",
    "Identity",
    "ImageRef",
    "MediaKind",
    "Notification",
    "Operation",
    "Post",
    "PostRef",
    "Profile",
    "QuoteState",
    "QuotedPost",
    "RecordRef",
    "Thread",
]


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


EmbedKind = Literal["images", "external", "record", "record_with_media", "video"]
"""What a post carries besides its text: pictures, a link card, a quoted post, both, a video."""

MediaKind = Literal["images", "external", "video"]
"""The media part of an embed (a `record_with_media` embed has one besides its quote)."""

QuoteState = Literal["visible", "not_found", "blocked", "detached", "unresolved"]
"""Whether a quoted record could be shown: `unresolved` when only its reference is known
(read from a record rather than from the AppView)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _image_line(alt: str) -> str:
    return f"[image: {_one_line(alt)}]" if alt.strip() else "[image]"


@dataclass(frozen=True, kw_only=True)
class EmbedLink:
    """A link card (`app.bsky.embed.external`)."""

    uri: str
    """The linked page."""
    title: str = ""
    """The card's title (may be empty)."""
    description: str = ""
    """The card's description (may be empty)."""

    def render(self) -> str:
        """`[link: title — uri]`, or `[link: uri]` without a title."""
        title = _one_line(self.title)
        return f"[link: {title} — {self.uri}]" if title else f"[link: {self.uri}]"


@dataclass(frozen=True, kw_only=True)
class QuotedPost:
    """The record a post quotes (`app.bsky.embed.record`): usually a post.

    A quoted feed, list, labeler or starter pack also lands here: `text` is then its name.
    """

    uri: str
    """The quoted record's AT-URI."""
    author_handle: str | None = None
    """Its author's handle; None when not visible or unresolved."""
    text: str | None = None
    """Its text; None when not visible or unresolved."""
    state: QuoteState = "visible"
    """Whether the AppView could show it."""
    images: list[ImageRef] = field(default_factory=list)
    """Its pictures, when visible and it has any."""

    def render(self) -> str:
        """`[quote @bob: text [image: alt]]`, or what stands in for a record that cannot be
        shown."""
        match self.state:
            case "visible":
                who = f" @{self.author_handle}" if self.author_handle else ""
                pictures = "".join(f" {_image_line(i.alt)}" for i in self.images)
                return f"[quote{who}: {_one_line(self.text or '')}{pictures}]"
            case "not_found":
                return "[quote: post not found]"
            case "blocked":
                return "[quote: blocked post]"
            case "detached":
                return "[quote: removed by its author]"
            case "unresolved":
                return f"[quote {self.uri}]"
            case _:  # pragma: no cover - exhaustive
                assert_never(self.state)


@dataclass(frozen=True, kw_only=True)
class Embed:
    """What a post embeds, independent of the SDK's view and record classes."""

    kind: EmbedKind
    """The embed's type."""
    media_kind: MediaKind | None = None
    """The kind of media it carries: `kind` itself for plain media, the media part of a
    `record_with_media`, None for a bare quote."""
    alt_texts: list[str] = field(default_factory=list)
    """Images: one alt text per image (empty when missing); video: its alt text, if any."""
    external: EmbedLink | None = None
    """The link card, for `external` media."""
    quote: QuotedPost | None = None
    """The quoted record, for `record` and `record_with_media`."""
    images: list[ImageRef] = field(default_factory=list)
    """Images: where each picture's bytes are, for a model that sees them (`alt_texts` is
    what every model reads)."""

    def render(self) -> str:
        """One line for the model: `[quote @bob: text] [image: a crow]`, `[link: t — uri]`."""
        parts: list[str] = []
        if self.quote is not None:
            parts.append(self.quote.render())
        if self.media_kind == "images":
            parts.extend(_image_line(a) for a in self.alt_texts)
        elif self.media_kind == "video":
            alt = _one_line(" ".join(self.alt_texts))
            parts.append(f"[video: {alt}]" if alt else "[video]")
        elif self.media_kind == "external" and self.external is not None:
            parts.append(self.external.render())
        return " ".join(parts)


def _media_from_view(media: Any) -> Embed | None:
    """The media part of a post view's embed, as an `Embed` of its own kind."""
    if isinstance(media, models.AppBskyEmbedImages.View):
        return Embed(kind="images", media_kind="images", alt_texts=[i.alt for i in media.images])
    if isinstance(media, models.AppBskyEmbedGallery.View):  # a newer many-image embed
        alts = [getattr(i, "alt", None) or "" for i in media.items]
        return Embed(kind="images", media_kind="images", alt_texts=alts)
    if isinstance(media, models.AppBskyEmbedVideo.View):
        return Embed(kind="video", media_kind="video", alt_texts=[media.alt] if media.alt else [])
    if isinstance(media, models.AppBskyEmbedExternal.View):
        card = media.external
        link = EmbedLink(uri=card.uri, title=card.title, description=card.description)
        return Embed(kind="external", media_kind="external", external=link)
    return None


def _quote_from_view(view: models.AppBskyEmbedRecord.View) -> QuotedPost:
    record = view.record
    uri = str(getattr(record, "uri", ""))
    if isinstance(record, models.AppBskyEmbedRecord.ViewRecord):
        text = getattr(record.value, "text", None) or ""
        views = record.embeds or [None]
        images = record_images(
            getattr(record.value, "embed", None), record.author.did, view_image_urls(views[0])
        )
        return QuotedPost(uri=uri, author_handle=record.author.handle, text=text, images=images)
    if isinstance(record, models.AppBskyEmbedRecord.ViewNotFound):
        return QuotedPost(uri=uri, state="not_found")
    if isinstance(record, models.AppBskyEmbedRecord.ViewBlocked):
        return QuotedPost(uri=uri, state="blocked")
    if isinstance(record, models.AppBskyEmbedRecord.ViewDetached):
        return QuotedPost(uri=uri, state="detached")
    # A feed generator, list, labeler or starter pack: show its name and creator.
    creator = getattr(record, "creator", None)
    name = (
        getattr(record, "display_name", None)
        or getattr(record, "name", None)
        or getattr(getattr(record, "record", None), "name", None)
        or ""
    )
    return QuotedPost(uri=uri, author_handle=getattr(creator, "handle", None), text=str(name))


def _embed_from_view(embed: Any, *, record_embed: Any, did: str) -> Embed | None:
    """The embed of a `PostView` (None without one, or for a kind phi does not know), its
    pictures' blobs read from the post record's `record_embed`."""
    found = _kinds_from_view(embed)
    if found is None or found.media_kind != "images":
        return found
    return replace(found, images=record_images(record_embed, did, view_image_urls(embed)))


def _kinds_from_view(embed: Any) -> Embed | None:
    if isinstance(embed, models.AppBskyEmbedRecord.View):
        return Embed(kind="record", quote=_quote_from_view(embed))
    if isinstance(embed, models.AppBskyEmbedRecordWithMedia.View):
        media = _media_from_view(embed.media)
        return Embed(
            kind="record_with_media",
            media_kind=media.media_kind if media else None,
            alt_texts=media.alt_texts if media else [],
            external=media.external if media else None,
            quote=_quote_from_view(embed.record),
        )
    return _media_from_view(embed)


def _media_from_record(media: Any) -> Embed | None:
    if isinstance(media, models.AppBskyEmbedImages.Main):
        return Embed(kind="images", media_kind="images", alt_texts=[i.alt for i in media.images])
    if isinstance(media, models.AppBskyEmbedGallery.Main):
        alts = [getattr(i, "alt", None) or "" for i in media.items]
        return Embed(kind="images", media_kind="images", alt_texts=alts)
    if isinstance(media, models.AppBskyEmbedVideo.Main):
        return Embed(kind="video", media_kind="video", alt_texts=[media.alt] if media.alt else [])
    if isinstance(media, models.AppBskyEmbedExternal.Main):
        card = media.external
        link = EmbedLink(uri=card.uri, title=card.title, description=card.description)
        return Embed(kind="external", media_kind="external", external=link)
    return None


def _embed_from_record(embed: Any, *, did: str) -> Embed | None:
    """The embed of a post record by `did` (quotes stay `unresolved`: a record holds only
    the URI)."""
    found = _kinds_from_record(embed)
    if found is None or found.media_kind != "images":
        return found
    return replace(found, images=record_images(embed, did))


def _kinds_from_record(embed: Any) -> Embed | None:
    if isinstance(embed, models.AppBskyEmbedRecord.Main):
        return Embed(kind="record", quote=QuotedPost(uri=embed.record.uri, state="unresolved"))
    if isinstance(embed, models.AppBskyEmbedRecordWithMedia.Main):
        media = _media_from_record(embed.media)
        return Embed(
            kind="record_with_media",
            media_kind=media.media_kind if media else None,
            alt_texts=media.alt_texts if media else [],
            external=media.external if media else None,
            quote=QuotedPost(uri=embed.record.record.uri, state="unresolved"),
        )
    return _media_from_record(embed)


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
    embed: Embed | None = None
    """Images, a link card, a quoted post or a video shown with the text."""

    @property
    def ref(self) -> PostRef:
        """A strong reference to this post."""
        return PostRef(uri=self.uri, cid=self.cid)

    def render_embed(self) -> str:
        """The embed as one line (`[link: title — uri]`, `[image: alt]`, `[quote @bob: text]`),
        or an empty string when the post has none."""
        return self.embed.render() if self.embed is not None else ""

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
            embed=_embed_from_view(
                view.embed, record_embed=getattr(record, "embed", None), did=view.author.did
            ),
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
    embed: Embed | None = None
    """For posts: the embed as the record has it (a quote's text is not resolved)."""

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
            embed=_embed_from_record(getattr(n.record, "embed", None), did=n.author.did),
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
        """The thread as phi reads it: one `@handle: text` line per post, oldest first.

        A post's embed follows its text on the same line (`@bob: look [link: t — uri]`).
        """
        lines = []
        for post in self.posts:
            embed = post.render_embed()
            lines.append(f"@{post.author_handle}: {post.text}" + (f" {embed}" if embed else ""))
        return "\n".join(lines)


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One record phi wrote to its repo, as `PhiClient.recent_operations` lists it."""

    collection: str
    """The record's collection NSID (`app.bsky.feed.post`, `io.phi.goal`...)."""
    rkey: str
    """Its record key."""
    uri: str
    """Its AT-URI."""
    created_at: datetime
    """The record's `createdAt`, else the time in its TID record key, else the Unix epoch."""
    summary: str
    """A short line: `post: first 80 chars`, `like at://...`, `follow did:...`, `goal: title`."""
