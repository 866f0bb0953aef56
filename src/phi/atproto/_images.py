"""The images a post carries, as references to their blobs: read from the post record (which
names each blob by CID, media type and size) and, when the AppView showed the post, paired
with the AppView's URL of each picture."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from atproto_client import models  # type: ignore[import-untyped]
from atproto_client.models.blob_ref import BlobRef  # type: ignore[import-untyped]

__all__ = ["ImageRef", "record_images", "view_image_urls"]


@dataclass(frozen=True, kw_only=True)
class ImageRef:
    """One picture of a post: where its bytes live, never the bytes."""

    did: str
    """The repository holding the blob: the post's author."""
    cid: str
    """The blob's CID (`com.atproto.sync.getBlob?did=...&cid=...`)."""
    mime_type: str
    """The media type the record declares (`image/jpeg`, `image/png`...)."""
    size: int
    """The size in bytes the record declares (checked again while reading)."""
    alt: str = ""
    """Its alt text (empty when the author wrote none)."""
    url: str | None = None
    """The AppView's URL of the full-size picture (re-encoded, maybe on a CDN); None when the
    post was read from its record only."""


def _items(media: Any) -> list[Any]:
    if isinstance(media, models.AppBskyEmbedRecordWithMedia.Main):
        media = media.media
    if isinstance(media, models.AppBskyEmbedImages.Main):
        return list(media.images)
    if isinstance(media, models.AppBskyEmbedGallery.Main):
        return [i for i in media.items if isinstance(i, models.AppBskyEmbedGallery.Image)]
    return []


def view_image_urls(view: Any) -> list[str]:
    """The AppView's full-size URLs of an embed view's pictures, in the record's order."""
    if isinstance(view, models.AppBskyEmbedRecordWithMedia.View):
        view = view.media
    if isinstance(view, models.AppBskyEmbedImages.View):
        return [str(i.fullsize) for i in view.images]
    if isinstance(view, models.AppBskyEmbedGallery.View):
        return [str(getattr(i, "fullsize", "")) for i in view.items]
    return []


def record_images(embed: Any, did: str, urls: Sequence[str] = ()) -> list[ImageRef]:
    """The pictures of a post record's `embed` (images, a gallery, or the media beside a
    quote), authored by `did`; `urls` are the AppView's, in the same order, when known."""
    found = []
    for index, item in enumerate(_items(embed)):
        blob = getattr(item, "image", None)
        if not isinstance(blob, BlobRef):
            continue  # a legacy blob without CID and size: nothing to fetch safely
        url = urls[index] if index < len(urls) and urls[index] else None
        found.append(
            ImageRef(
                did=did,
                cid=str(blob.cid),
                mime_type=blob.mime_type,
                size=blob.size,
                alt=item.alt or "",
                url=url,
            )
        )
    return found
