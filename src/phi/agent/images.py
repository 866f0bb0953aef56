"""The pictures of a notification batch, fetched for a model that sees them.

Whether the model sees is decided here only (`takes_images`): `PHI_MODEL_VISION=auto` follows
the model's pydantic-ai profile (`supports_image_input`; the local model's says no). A
picture is named by its author's DID and its blob's CID; its bytes come from phi's own PDS
(`com.atproto.sync.getBlob`, the original bytes, when the author's repository lives there:
the whole local network, a self-hosted PDS's people), else from the AppView's image URL
(`cdn.bsky.app` on the real network).

Those addresses come from posts, so they are fetched as `phi.agent.urls` checks links: only
public addresses, each redirect vetted, the connection pinned to the vetted address. The one
exception is phi's configured PDS, which is trusted configuration and may be on loopback (the
local network's is); nothing else on loopback is. A picture over the size cap, of a type
models do not take, or past the batch's count is not fetched: the model reads its alt text
and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import anyio
import httpx
from pydantic_ai.models import Model

from phi.agent.deps import Batch, PhiDeps, Vision
from phi.agent.urls import MAX_REDIRECTS, Resolver, _getaddrinfo, _vet
from phi.atproto import ImageRef, Post

__all__ = [
    "IMAGE_TYPES",
    "BatchImage",
    "FetchedImage",
    "batch_images",
    "fetch_images",
    "images_for_run",
    "takes_images",
]

IMAGE_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The media types passed to a model: those the major providers all accept."""

FETCH_SECONDS: Final = 20.0
"""Time allowed for one picture, every source and redirect included."""

_REDIRECTS: Final = {301, 302, 303, 307, 308}
_HEADERS: Final = {"User-Agent": "phi-image-fetch/1.0", "Accept": ", ".join(sorted(IMAGE_TYPES))}


@dataclass(frozen=True, kw_only=True)
class BatchImage:
    """A picture of a post in the batch."""

    post_uri: str
    """The post that shows it (the quoting post for a quoted post's picture)."""
    author_handle: str
    """Who posted the picture."""
    ref: ImageRef
    """Its blob and alt text."""
    quoted: bool = False
    """Whether it belongs to the post that `post_uri` quotes."""


@dataclass(frozen=True, kw_only=True)
class FetchedImage:
    """What became of one picture: its bytes for the model, or why it has none."""

    image: BatchImage
    data: bytes | None = None
    """The picture, when fetched."""
    media_type: str = ""
    """The media type it was served with (one of `IMAGE_TYPES`), when fetched."""
    source: str | None = None
    """The URL the bytes came from, when fetched."""
    skipped: str | None = None
    """Why it is not passed (over the cap, not an image, refused, failed); None when it is."""


def takes_images(model: Model | str | None, vision: Vision) -> bool:
    """Whether pictures go to `model` as images under `PHI_MODEL_VISION=vision`."""
    match vision:
        case "off":
            return False
        case "on":
            return True
        case "auto":
            # A model named by a string is resolved by pydantic-ai at run time; phi always
            # passes a `Model`, so a string here is a test's: no pictures.
            return isinstance(model, Model) and bool(
                model.profile.get("supports_image_input", True)
            )


def _of_post(post: Post) -> list[BatchImage]:
    embed = post.embed
    if embed is None:
        return []
    found = [
        BatchImage(post_uri=post.uri, author_handle=post.author_handle, ref=ref)
        for ref in embed.images
    ]
    quote = embed.quote
    if quote is not None and quote.state == "visible":
        found += [
            BatchImage(
                post_uri=post.uri, author_handle=quote.author_handle or "", ref=ref, quoted=True
            )
            for ref in quote.images
        ]
    return found


def batch_images(batch: Batch) -> list[BatchImage]:
    """The pictures of the batch's posts and of the posts they quote, in batch order, each
    blob once."""
    found: dict[tuple[str, str], BatchImage] = {}
    for item in batch.items:
        n = item.notification
        if item.post is not None:
            images = _of_post(item.post)
        elif n.embed is not None:  # the post could not be read: the record's own pictures
            images = [
                BatchImage(post_uri=n.uri, author_handle=n.author_handle, ref=ref)
                for ref in n.embed.images
            ]
        else:
            images = []
        for image in images:
            found.setdefault((image.ref.did, image.ref.cid), image)
    return list(found.values())


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host.rstrip(".").lower(), url.port or default


def blob_url(pds_url: str, ref: ImageRef) -> str:
    """`com.atproto.sync.getBlob` of `ref` on the PDS at `pds_url`."""
    base = httpx.URL(pds_url.rstrip("/") + "/xrpc/com.atproto.sync.getBlob")
    return str(base.copy_merge_params({"did": ref.did, "cid": ref.cid}))


async def _request(
    http: httpx.AsyncClient,
    url: httpx.URL,
    *,
    trusted: frozenset[tuple[str, str, int | None]],
    resolve: Resolver,
) -> httpx.Request | str:
    """The GET of `url`, or why it is refused: a trusted origin goes as configured; any
    other address only when public, and to the very address that was vetted."""
    if _origin(url) in trusted:
        return http.build_request("GET", url, headers=_HEADERS)
    refusal, address = await _vet(url, resolve)
    if refusal is not None or address is None:
        return f"refused {str(url)!r}: {refusal}"
    return http.build_request(
        "GET",
        url.copy_with(host=str(address)),
        headers={**_HEADERS, "Host": url.netloc.decode("ascii")},
        extensions={"sni_hostname": url.raw_host.decode("ascii")},
    )


async def _read(response: httpx.Response, max_bytes: int) -> tuple[bytes, str] | str:
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type not in IMAGE_TYPES:
        return f"served as {media_type or 'no type'!r}, not an image type phi passes"
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        return f"{int(declared):,} bytes, over the {max_bytes:,}-byte limit"
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > max_bytes:  # a server that did not say, or lied
            return f"more than the {max_bytes:,}-byte limit"
    return bytes(body), media_type


async def _get(
    url: str,
    http: httpx.AsyncClient,
    *,
    trusted: frozenset[tuple[str, str, int | None]],
    resolve: Resolver,
    max_bytes: int,
) -> tuple[bytes, str] | str:
    """The picture at `url` and its media type, or why there is none."""
    current = httpx.URL(url)
    for _hop in range(MAX_REDIRECTS + 1):
        request = await _request(http, current, trusted=trusted, resolve=resolve)
        if isinstance(request, str):
            return request
        response = await http.send(request, stream=True, follow_redirects=False)
        try:
            location = response.headers.get("location")
            if response.status_code in _REDIRECTS and location:
                current = current.join(location)
                continue
            if not response.is_success:
                return f"HTTP {response.status_code} from {str(current)!r}"
            return await _read(response, max_bytes)
        finally:
            await response.aclose()
    return f"more than {MAX_REDIRECTS} redirects"


async def _fetch_one(
    image: BatchImage,
    http: httpx.AsyncClient,
    *,
    pds_url: str,
    resolve: Resolver,
    max_bytes: int,
    seconds: float,
) -> FetchedImage:
    ref = image.ref
    if ref.mime_type.lower() not in IMAGE_TYPES:
        return FetchedImage(image=image, skipped=f"{ref.mime_type!r} is not an image type")
    if ref.size > max_bytes:
        return FetchedImage(
            image=image, skipped=f"{ref.size:,} bytes, over the {max_bytes:,}-byte limit"
        )
    trusted = frozenset({_origin(httpx.URL(pds_url))})
    reasons: list[str] = []
    for url in [blob_url(pds_url, ref), *([ref.url] if ref.url else [])]:
        try:
            with anyio.fail_after(seconds):
                got = await _get(url, http, trusted=trusted, resolve=resolve, max_bytes=max_bytes)
        except TimeoutError:
            got = f"no answer within {seconds:g} s"
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            got = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if isinstance(got, tuple):
            data, media_type = got
            return FetchedImage(image=image, data=data, media_type=media_type, source=url)
        reasons.append(got)
    return FetchedImage(image=image, skipped="could not be fetched: " + "; ".join(reasons))


async def fetch_images(
    images: Sequence[BatchImage],
    *,
    pds_url: str,
    max_bytes: int,
    limit: int,
    client: httpx.AsyncClient | None = None,
    resolve: Resolver | None = None,
    timeout: float = FETCH_SECONDS,  # noqa: ASYNC109 - a limit per picture
) -> list[FetchedImage]:
    """Fetch the first `limit` of `images`, one by one; the rest, and any picture over
    `max_bytes` or not of `IMAGE_TYPES`, come back with the reason they were skipped.

    Failures are results, never raised. `client` (by default a fresh one that ignores proxy
    settings: requests go to vetted addresses) and `resolve` are for tests.
    """
    lookup = resolve or _getaddrinfo
    out: list[FetchedImage] = []

    async def fetch_all(http: httpx.AsyncClient) -> None:
        for index, image in enumerate(images):
            if index >= limit:
                reason = f"over the {limit} pictures one batch may pass"
                out.append(FetchedImage(image=image, skipped=reason))
                continue
            out.append(
                await _fetch_one(
                    image,
                    http,
                    pds_url=pds_url,
                    resolve=lookup,
                    max_bytes=max_bytes,
                    seconds=timeout,
                )
            )

    if client is not None:
        await fetch_all(client)
    else:
        async with httpx.AsyncClient(
            timeout=timeout, follow_redirects=False, trust_env=False
        ) as http:
            await fetch_all(http)
    return out


async def images_for_run(deps: PhiDeps, *, model: Model | str | None) -> list[FetchedImage]:
    """The batch's pictures, fetched, when `model` takes images; else none (a text-only model
    reads the alt texts the batch block shows)."""
    config = deps.config
    if deps.batch is None or not takes_images(model, config.vision):
        return []
    images = batch_images(deps.batch)
    if not images:
        return []
    return await fetch_images(
        images,
        pds_url=deps.client.config.pds_url,
        max_bytes=config.image_max_bytes,
        limit=config.images_per_batch,
    )
