"""Post text: splitting at Bluesky's 300-grapheme limit and rich-text facets.

Pure functions, no network: the client resolves handles and decides who may be mentioned,
then asks these for the pieces and their facets. Facet offsets are UTF-8 byte offsets into
the exact text that is posted, so facets are computed per chunk, after splitting.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from atproto_client import models  # type: ignore[import-untyped]
from atproto_client.utils.facet_detection import detect_facets, detect_mentions  # type: ignore[import-untyped]

from phi.atproto._graphemes import graphemes

__all__ = [
    "MAX_POST_BYTES",
    "MAX_POST_GRAPHEMES",
    "Facet",
    "find_facets",
    "mentioned_handles",
    "split_text",
]

MAX_POST_GRAPHEMES = 300
"""Bluesky's limit on a post's text, in graphemes."""
MAX_POST_BYTES = 3000
"""The lexicon's limit on a post's text, in UTF-8 bytes."""


@dataclass(frozen=True, kw_only=True)
class Facet:
    """A span of a post's text that is a mention, a link or a hashtag."""

    kind: Literal["mention", "link", "tag"]
    """What the span is."""
    byte_start: int
    """Start of the span in the UTF-8 encoded text (inclusive)."""
    byte_end: int
    """End of the span in the UTF-8 encoded text (exclusive)."""
    value: str
    """The DID for a mention, the URI for a link, the tag (without `#`) for a hashtag."""

    def to_sdk(self) -> models.AppBskyRichtextFacet.Main:
        """This facet as the `app.bsky.richtext.facet` the SDK writes."""
        feature: (
            models.AppBskyRichtextFacet.Mention
            | models.AppBskyRichtextFacet.Link
            | models.AppBskyRichtextFacet.Tag
        )
        if self.kind == "mention":
            feature = models.AppBskyRichtextFacet.Mention(did=self.value)
        elif self.kind == "link":
            feature = models.AppBskyRichtextFacet.Link(uri=self.value)
        else:
            feature = models.AppBskyRichtextFacet.Tag(tag=self.value)
        return models.AppBskyRichtextFacet.Main(
            features=[feature],
            index=models.AppBskyRichtextFacet.ByteSlice(
                byte_start=self.byte_start, byte_end=self.byte_end
            ),
        )


def mentioned_handles(text: str) -> list[str]:
    """The handles `@mentioned` in `text`, lowercased, in order, without repeats."""
    seen: dict[str, None] = {}
    for match in detect_mentions(text):
        seen.setdefault(match.handle.lower(), None)
    return list(seen)


def find_facets(text: str, *, mention_dids: Mapping[str, str]) -> list[Facet]:
    """Links, hashtags and allowed mentions in `text`, sorted by position.

    Args:
        text: The exact text that will be posted.
        mention_dids: Lowercased handle -> DID for the handles that may be mentioned. Any
            other `@handle` stays plain text: phi tags only people who agreed to it.

    Returns:
        The facets, with UTF-8 byte offsets.
    """
    found: list[Facet] = []
    for facet in detect_facets(text):
        feature = facet.features[0]
        start, end = facet.index.byte_start, facet.index.byte_end
        if isinstance(feature, models.AppBskyRichtextFacet.Link):
            found.append(Facet(kind="link", byte_start=start, byte_end=end, value=feature.uri))
        elif isinstance(feature, models.AppBskyRichtextFacet.Tag):
            found.append(Facet(kind="tag", byte_start=start, byte_end=end, value=feature.tag))
    for match in detect_mentions(text):
        did = mention_dids.get(match.handle.lower())
        if did is not None:
            found.append(
                Facet(
                    kind="mention", byte_start=match.byte_start, byte_end=match.byte_end, value=did
                )
            )
    return sorted(found, key=lambda f: f.byte_start)


def _break_at(window: list[str]) -> int:
    """Where to cut a full window of graphemes: paragraph, sentence, word, else anywhere."""
    n = len(window)
    for i in range(n - 1, n // 2, -1):
        if window[i] == "\n" and window[i - 1] == "\n":
            return i + 1
    for i in range(n - 1, n // 3, -1):
        if window[i] in (" ", "\n") and window[i - 1] in (".", "!", "?", "…", ":", ";"):
            return i + 1
    for i in range(n - 1, 0, -1):
        if window[i].isspace():
            return i + 1
    return n


def split_text(
    text: str, *, limit: int = MAX_POST_GRAPHEMES, max_bytes: int = MAX_POST_BYTES
) -> list[str]:
    """Split `text` into posts of at most `limit` graphemes, for a self-thread.

    Cuts prefer a paragraph break, then the end of a sentence, then a space, so links,
    mentions and words stay whole; a single word longer than a post is cut where it must be.

    Args:
        text: The whole text.
        limit: Graphemes per post.
        max_bytes: UTF-8 bytes per post.

    Returns:
        The posts' texts, stripped, none empty (an empty list for blank text).
    """
    rest = graphemes(text.strip())
    chunks: list[str] = []
    while rest:
        window: list[str] = []
        size = 0
        for g in rest[:limit]:
            size += len(g.encode())
            if size > max_bytes:
                break
            window.append(g)
        cut = len(window) if len(window) == len(rest) else _break_at(window)
        chunk = "".join(window[:cut]).strip()
        if chunk:
            chunks.append(chunk)
        while cut < len(rest) and rest[cut].isspace():
            cut += 1
        rest = rest[cut:]
    return chunks
